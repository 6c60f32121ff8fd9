//! What every front end (the examples, the `parprims` command) does around
//! a run: open the GPU or say plainly that there is none, print the header,
//! the table and the verdict, write the CSV.

use std::path::Path;
use std::process::ExitCode;

use gpu_core::{Gpu, Result};
use parprims_testkit::bench::write_csv;

use super::table::{render_table, Row};
use super::{no_gpu_sentence, Lab, LabOptions};

/// Opens the GPU and measures its ceiling, printing the header; on a
/// machine without a GPU prints one sentence saying so and returns `None`.
pub fn open_or_explain(options: LabOptions) -> Result<Option<Lab>> {
    match Gpu::new(options.ordinal) {
        Ok(gpu) => {
            let lab = Lab::with_gpu(gpu, options)?;
            println!("{}\n", lab.header());
            Ok(Some(lab))
        }
        Err(error) => {
            println!("{}", no_gpu_sentence(&error));
            Ok(None)
        }
    }
}

/// Exit status 1 when some check failed, with a line saying how many.
pub fn verdict(rows: &[Row]) -> ExitCode {
    let failed = rows.iter().filter(|r| r.check.failed()).count();
    if failed == 0 {
        let passed = rows.iter().filter(|r| r.check.passed()).count();
        println!("all {passed} checked rows match their reference");
        ExitCode::SUCCESS
    } else {
        println!("{failed} row(s) failed their check");
        ExitCode::from(1)
    }
}

/// Prints the table of a GPU run, writes its records to `csv` if given,
/// and returns the verdict.
pub fn finish(lab: &Lab, rows: &[Row], csv: Option<&Path>) -> Result<ExitCode> {
    print!("{}", render_table(rows, Some(lab.ceiling().gbps)));
    if let Some(path) = csv {
        write_csv(path, &lab.records(rows))?;
        println!("wrote {}", path.display());
    }
    Ok(verdict(rows))
}

/// Runs `body` and turns an error into a message and exit status 2.
pub fn exit_with(body: impl FnOnce() -> Result<ExitCode>) -> ExitCode {
    body().unwrap_or_else(|error| {
        eprintln!("error: {error}");
        ExitCode::from(2)
    })
}
