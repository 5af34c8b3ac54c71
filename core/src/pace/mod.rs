//! Layer 3, pace: when an account's limit window will run out at the pace it
//! was used over the last hour, for every account whose `limits.observed` the
//! daemon sees (the pool's and plain hooks' alike: a status line, a Codex
//! rollout), and one warning when that comes before the window resets
//! ("Claude Code account a@x will hit its 5-hour limit around 14:20, resets
//! 15:00").
//!
//! `Pace` is the pure part: a short series of (time, used) per window and
//! period, the projection, and which periods were already warned about. It is
//! kept in `pace.json` (0600) by the daemon's task (`watch`), so a restart
//! neither forgets a pace nor warns twice, and read from there by the board
//! and control's hello, which show the projection. It never guesses a pace
//! from one observation or from a window going down, and it never sends
//! anything: the warning is an attention on the session that reported it.

mod series;
mod watch;

pub use series::{Pace, Standing, Warning, WindowKey, local_clock, window_words, words};
pub use watch::{AccountNames, PACE_ATTENTION, account_names, run};
