//! digipology-lua: the sandboxed Lua 5.4 runtime of a Digipology room.
//!
//! One VM per room. Each script binding gets its own environment built from
//! a whitelist; the creator API (the prelude, `src/lua/`) runs over typed
//! native functions. The runtime implements the kernel's [`ScriptHost`]: guards see the
//! state read-only, handlers issue subcommands through the transaction.
//!
//! [`ScriptHost`]: digipology_kernel::ScriptHost

#![deny(unsafe_code)]
#![warn(missing_docs)]
// The function-length budget (clippy.toml; the policy is in Cargo.toml).
#![warn(clippy::too_many_lines)]
// A library prints nothing: output goes to the sink or hook its caller gives.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

// Floors, bottom to top (no module names one above it; checked by
// `kernel/tests/floors.rs`): spec, shared, convert → errors, access →
// storage, submit, records → slot → raw, native → host → vm, dispatch,
// callbacks.
mod access;
mod callbacks;
mod convert;
mod dispatch;
mod errors;
mod host;
mod native;
mod raw;
mod records;
mod shared;
mod slot;
mod spec;
mod storage;
mod submit;
mod vm;

pub use errors::{line_of, REASON_BYTES_MAX, STALLED_MSG};
pub use host::{LuaHost, MatchAnswers, PhaseAnswer};
pub use spec::{BindingSpec, Limits, LoadError, Modules, ScriptSpec};
pub use vm::{check_syntax, PRELUDE};
