//! Scan, reduce, compaction and a histogram over every GPU of this host.
//!
//! ```text
//! cargo run --release -p parprims-dist --example multi_gpu -- [n]
//! ```
//!
//! Splits n (default 10,000,000) random i32 over every GPU in even blocks,
//! runs each distributed operation, and checks it against the CPU
//! reference. Needs libnccl (a typed error says so otherwise).

use compact::Predicate;
use dist::{Group, Placement, Sharded};
use gpu_core::Sum;
use scan::ScanKind;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = match std::env::args().nth(1) {
        Some(text) => text.parse()?,
        None => 10_000_000,
    };
    let group = Group::all()?;
    println!("{group:?}, NCCL {}", dist::nccl_version()?);
    let data: Vec<i32> = parprims_testkit::rng::random_vec(n, 2024, -1000.0, 1000.0);
    let x = Sharded::scatter_from_host(&group, &data)?;
    println!("{n} items in shards of {:?}", x.lens());

    let total = dist::sum(&group, &x)?;
    assert_eq!(total, data.iter().fold(0i32, |a, &b| a.wrapping_add(b)));
    println!("sum: {total}");

    let prefix_sums = dist::scan(&group, &x, &Sum, ScanKind::Inclusive)?;
    assert_eq!(
        prefix_sums.gather_to_host(&group)?,
        scan::cpu::inclusive(&data, &Sum)
    );
    println!(
        "inclusive scan: checked, last value {}",
        prefix_sums
            .gather_to_host(&group)?
            .last()
            .copied()
            .unwrap_or(0)
    );

    let positive = Predicate::Gt(0);
    let kept = dist::select_if(&group, &x, &positive, Placement::AsKept)?;
    println!("select_if > 0, as kept: shards of {:?}", kept.lens());
    let even = dist::select_if(&group, &x, &positive, Placement::Even)?;
    println!("select_if > 0, rebalanced: shards of {:?}", even.lens());
    assert_eq!(
        even.gather_to_host(&group)?,
        compact::cpu::select_if(&data, &positive)
    );

    let counts = dist::histogram_even::<i32, u32>(&group, &x, 8, -1000, 1000)?.to_host(&group)?;
    assert_eq!(
        counts,
        reduce::histogram::cpu::histogram_even::<i32, u32>(&data, 8, -1000, 1000)?
    );
    println!("histogram in 8 bins over [-1000, 1000): {counts:?}");
    println!("every result matches the CPU reference");
    Ok(())
}
