//! A progress bar for runs longer than a couple of seconds.
//!
//! Drawn on stderr, and only when stderr is a terminal (indicatif hides it
//! otherwise), so tables and CSV on stdout stay clean and logs of
//! non-interactive runs carry no control characters.

use indicatif::{ProgressBar, ProgressStyle};

/// A bar over a known number of cases.
pub struct Progress {
    bar: ProgressBar,
    open_ended: bool,
}

impl Progress {
    /// A bar of `total` steps.
    pub fn new(total: u64) -> Progress {
        let bar = ProgressBar::new(total);
        if let Ok(style) =
            ProgressStyle::with_template("{elapsed_precise} [{bar:32}] {pos}/{len} {wide_msg}")
        {
            bar.set_style(style.progress_chars("=> "));
        }
        Progress {
            bar,
            open_ended: false,
        }
    }

    /// A bar whose total grows with every [`Progress::step`], for runs that
    /// do not know their length up front (it shows what runs and how many
    /// cases are done).
    pub fn open_ended() -> Progress {
        Progress {
            open_ended: true,
            ..Progress::new(0)
        }
    }

    /// A bar that draws nothing (tests, nested runs).
    pub fn hidden() -> Progress {
        Progress {
            bar: ProgressBar::hidden(),
            open_ended: false,
        }
    }

    /// Says what runs now.
    pub fn start(&self, what: &str) {
        self.bar.set_message(what.to_owned());
    }

    /// One step done.
    pub fn step(&self) {
        if self.open_ended {
            self.bar.inc_length(1);
        }
        self.bar.inc(1);
    }

    /// Prints `text` on stdout without tearing the bar.
    pub fn finish_line(&self, text: &str) {
        self.bar.suspend(|| println!("{text}"));
    }

    /// Removes the bar from the terminal.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
