//! `SinglePass` with an explicit [`Policy`]: the entry points the tuning
//! sweep (`tests/compact_tuning.rs`) uses to compare the candidate kernel
//! shapes in one process. Same contracts as the `*_into` functions of the
//! crate root (enqueued, no host synchronisation, count left on the device,
//! every argument checked before anything is written), plus: the tuning must
//! be the default or one of [`Policy::candidates`] for the element size
//! (only catalogued modules are compiled), and the predicate must be a
//! built-in one (a caller's expression is compiled at the default tuning
//! only).

use gpu_core::{DeviceView, DeviceViewMut, Element, Error, Gpu, Result};

use crate::modules::{validate_tuning, Policy};
use crate::predicate::Predicate;
use crate::validate::{validate_partition_into, validate_select_into};
use crate::{single_pass, Selection};

fn builtin_only<T: Element>(predicate: &Predicate<T>) -> Result<()> {
    if predicate.custom().is_some() {
        return Err(Error::invalid(
            "predicate",
            "tuned single-pass variants take built-in predicates; a custom one runs at the default tuning",
        ));
    }
    Ok(())
}

fn run<T: Element>(
    gpu: &Gpu,
    selection: &Selection<'_, T>,
    output: &mut DeviceViewMut<'_, T>,
    count_out: &mut DeviceViewMut<'_, u64>,
    partition: bool,
    tuning: &Policy,
) -> Result<()> {
    if selection.len() == 0 {
        return count_out.fill(gpu, 0);
    }
    single_pass::run(gpu, selection, output, count_out, partition, tuning)
}

/// [`crate::select_flagged_into`] with `SinglePass` at `tuning`.
/// **Does not synchronise.**
pub fn select_flagged_into_tuned<T: Element>(
    gpu: &Gpu,
    input: DeviceView<'_, T>,
    flags: DeviceView<'_, u8>,
    mut output: DeviceViewMut<'_, T>,
    mut count_out: DeviceViewMut<'_, u64>,
    tuning: &Policy,
) -> Result<()> {
    validate_select_into(
        (input.device_ptr(), input.len(), T::BYTES),
        Some((flags.device_ptr(), flags.len())),
        (output.device_ptr(), output.len(), T::BYTES),
        (count_out.device_ptr(), count_out.len()),
    )?;
    validate_tuning(T::BYTES, tuning)?;
    run(
        gpu,
        &Selection::Flags { input, flags },
        &mut output,
        &mut count_out,
        false,
        tuning,
    )
}

/// [`crate::select_if_into`] with `SinglePass` at `tuning` (built-in
/// predicates only). **Does not synchronise.**
pub fn select_if_into_tuned<T: Element>(
    gpu: &Gpu,
    input: DeviceView<'_, T>,
    predicate: &Predicate<T>,
    mut output: DeviceViewMut<'_, T>,
    mut count_out: DeviceViewMut<'_, u64>,
    tuning: &Policy,
) -> Result<()> {
    validate_select_into(
        (input.device_ptr(), input.len(), T::BYTES),
        None,
        (output.device_ptr(), output.len(), T::BYTES),
        (count_out.device_ptr(), count_out.len()),
    )?;
    validate_tuning(T::BYTES, tuning)?;
    builtin_only(predicate)?;
    run(
        gpu,
        &Selection::Predicate { input, predicate },
        &mut output,
        &mut count_out,
        false,
        tuning,
    )
}

/// [`crate::partition_into`] with `SinglePass` at `tuning` (built-in
/// predicates only; the count pass is the same for every tuning).
/// **Does not synchronise.**
pub fn partition_into_tuned<T: Element>(
    gpu: &Gpu,
    input: DeviceView<'_, T>,
    predicate: &Predicate<T>,
    mut output: DeviceViewMut<'_, T>,
    mut count_out: DeviceViewMut<'_, u64>,
    tuning: &Policy,
) -> Result<()> {
    validate_partition_into(
        (input.device_ptr(), input.len(), T::BYTES),
        (output.device_ptr(), output.len(), T::BYTES),
        (count_out.device_ptr(), count_out.len()),
    )?;
    validate_tuning(T::BYTES, tuning)?;
    builtin_only(predicate)?;
    run(
        gpu,
        &Selection::Predicate { input, predicate },
        &mut output,
        &mut count_out,
        true,
        tuning,
    )
}
