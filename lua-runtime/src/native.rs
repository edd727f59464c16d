//! The typed native functions the prelude calls on its hot paths (proxy
//! reads, handle checks, lookups, moves, subcommands).
//!
//! Each is its own Lua function with typed arguments: no operation name to
//! dispatch on, no argument list to build, integers and handles passed as
//! Lua integers. Everything else goes through the general `K(op, …)`
//! dispatcher in [`crate::access`]. Measured inside a handler: a proxy read
//! went from ~1.6 µs to well under half of that (docs/performance.md).

use std::rc::Rc;

use mlua::{Lua, MultiValue, Table, Value as LuaValue};

use crate::access::READ_FIELDS;
use crate::slot::Slot;

fn outside() -> mlua::Error {
    mlua::Error::runtime("the game can only be reached from inside a callback")
}

/// Builds the table of typed natives, each reaching the running callback's
/// [`Call`](crate::access::Call) through `slot`.
pub fn natives(lua: &Lua, slot: &Rc<Slot>) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let fields = lua.create_sequence_from(READ_FIELDS.iter().copied())?;
    t.raw_set("FIELDS", fields)?;

    let s = slot.clone();
    t.raw_set(
        "read",
        lua.create_function(move |lua, (key, code): (i64, i64)| {
            s.with_current(|c| c.read_code(lua, key, code))
                .unwrap_or_else(|| Err(outside()))
        })?,
    )?;
    let s = slot.clone();
    t.raw_set(
        "alive",
        lua.create_function(move |_, (key, id): (i64, LuaValue)| {
            s.with_current(|c| Ok(c.alive_key(key, &id)))
                .unwrap_or_else(|| Err(outside()))
        })?,
    )?;
    let s = slot.clone();
    t.raw_set(
        "lookup",
        lua.create_function(move |_, id: LuaValue| {
            s.with_current(|c| Ok(c.lookup_key(&id)))
                .unwrap_or_else(|| Err(outside()))
        })?,
    )?;
    let s = slot.clone();
    t.raw_set(
        "items",
        lua.create_function(move |lua, key: i64| {
            s.with_current(|c| c.item_handles(lua, key))
                .unwrap_or_else(|| Err(outside()))
        })?,
    )?;
    let s = slot.clone();
    t.raw_set(
        "move_to",
        lua.create_function(
            move |lua, (key, id, to, index): (i64, LuaValue, LuaValue, LuaValue)| {
                s.with_current(|c| c.move_to(lua, key, &id, &to, &index))
                    .unwrap_or_else(|| Err(outside()))
            },
        )?,
    )?;
    let s = slot.clone();
    t.raw_set(
        "move_all",
        lua.create_function(move |lua, (key, id, to): (i64, LuaValue, LuaValue)| {
            s.with_current(|c| c.move_all(lua, key, &id, &to))
                .unwrap_or_else(|| Err(outside()))
        })?,
    )?;
    let s = slot.clone();
    t.raw_set(
        "submit",
        lua.create_function(move |lua, args: MultiValue| {
            s.with_current(|c| c.submit_args(lua, &args))
                .unwrap_or_else(|| Err(outside()))
        })?,
    )?;
    Ok(t)
}
