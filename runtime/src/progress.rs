//! Progress bars for long operations (publish, replay, rebuild): count, rate and ETA on
//! stderr, hidden when asked or when stderr is not a terminal.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A bar over `total` items (a spinner when the total is unknown), labelled `what`.
pub fn bar(total: Option<u64>, what: &str, show: bool) -> ProgressBar {
    let b = match total {
        Some(n) => ProgressBar::new(n),
        None => ProgressBar::new_spinner(),
    };
    if !show {
        b.set_draw_target(ProgressDrawTarget::hidden());
    }
    let template = match total {
        Some(_) => "{spinner} {msg} [{bar:30}] {pos}/{len} ({per_sec}, ETA {eta}) {elapsed}",
        None => "{spinner} {msg} {pos} ({per_sec}) {elapsed}",
    };
    b.set_style(
        ProgressStyle::with_template(template)
            .unwrap_or_else(|_| ProgressStyle::default_spinner())
            .progress_chars("=> "),
    );
    b.set_message(what.to_owned());
    b
}
