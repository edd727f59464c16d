//! `digipology-room`: one room as a deterministic machine, shared by the
//! CLI, the tests and (later) the server. It orders actions, keeps the
//! room clock, delivers due timers, writes the replayable record, saves and
//! resumes rooms, and loads game packages. It prints nothing: events go to
//! the sink the caller hands it, and notices (script `print` lines, bounds
//! reached) to the notice hook the caller sets (collected otherwise).
#![forbid(unsafe_code)]
#![warn(missing_docs)]
// The function-length budget (clippy.toml; the policy is in Cargo.toml).
#![warn(clippy::too_many_lines)]
// A library prints nothing: output goes to the sink or hook its caller gives.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

pub mod ceilings;
pub mod error;
pub mod jsonl;
pub mod matches;
mod matching;
pub mod package;
pub mod record;
pub mod room;
pub mod sentence;

pub use error::CliError;
pub use package::{build_room, resume_room, room_from_save, Package, Save};
pub use room::{Input, Room, Step};
