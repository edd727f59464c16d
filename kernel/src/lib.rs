//! digipology-kernel: the deterministic heart of a Digipology room.
//!
//! Ordered actions go in, canonical events come out, and the canonical state
//! (hashable, snapshot-able) changes only through registered actions. No Lua,
//! no I/O, no clock: the script runtime plugs in through [`ScriptHost`].
//!
//! ```
//! use digipology_kernel::{Kernel, NoScripts, State};
//! let mut k = Kernel::new(State::new(42));
//! let out = k.process_line(r#"{"type":"system.game_start","source":{"kind":"system"},"payload":{}}"#, &mut NoScripts);
//! assert!(out.accepted());
//! assert_eq!(out.events[0].type_name(), "game.started");
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]
// The function-length budget (clippy.toml; the policy is in Cargo.toml).
#![warn(clippy::too_many_lines)]
// A library prints nothing: output goes to the sink or hook its caller gives.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

pub mod action;
mod actions;
pub mod bytes;
mod canonical;
pub mod cards;
mod components;
mod constructors;
mod def;
pub mod digest;
mod entity;
mod envelope;
pub mod event;
mod field;
pub mod host;
mod id;
pub mod kernel;
pub mod load;
mod num;
pub mod observe;
pub mod payload;
mod placement;
mod records;
pub mod reject;
pub mod restore;
pub mod rng;
pub mod spatial;
pub mod state;
pub mod transform;
pub mod txn;
mod undo;
pub mod value;

pub use action::{Action, ActionType, Source, TypeName};
pub use digest::{LeafChange, Section};
pub use event::{Event, EventKind, ScriptErrorKind, ScriptFailure};
pub use host::{ClosureHost, GuardKind, GuardRequest, NoScripts, ScriptCtx, ScriptHost, Verdict};
pub use kernel::{handler_name, Kernel, Limits, Outcome};
pub use load::{state_from_game, state_from_game_streamed, LoadError};
pub use observe::{Sight, Viewer};
pub use payload::{FieldValue, Fields, ShortStr, MAX_SAFE_INTEGER};
pub use reject::{RejectCode, Rejection};
pub use restore::state_from_canonical;
pub use state::TEXT_BYTES_MAX;
pub use state::{Entity, EntityKey, Id, State, Visibility};
pub use value::Value;
