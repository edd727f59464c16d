//! digipology-lua: the sandboxed Lua 5.4 runtime of a Digipology room.
//!
//! One VM per room. Each script binding gets its own environment built from
//! a whitelist; the creator API (`prelude.lua`) runs over a narrow native
//! core. The runtime implements the kernel's [`ScriptHost`]: guards see the
//! state read-only, handlers issue subcommands through the transaction.
//!
//! [`ScriptHost`]: digipology_kernel::ScriptHost

#![deny(unsafe_code)]
#![warn(missing_docs)]

mod access;
mod convert;
mod host;
mod native;
mod shared;
mod slot;

pub use host::{
    check_syntax, line_of, BindingSpec, Limits, LoadError, LuaHost, Modules, ScriptSpec, PRELUDE,
};
