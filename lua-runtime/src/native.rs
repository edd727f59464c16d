//! The native functions the prelude reaches the game through: one typed Lua
//! function per operation (no operation name to dispatch on; integers and
//! handles pass as Lua integers), each reaching the running callback's
//! [`Call`](crate::access::Call) through the [`Slot`]. Outside a callback
//! every one of them raises "the game can only be reached from inside a
//! callback". Measured inside a handler: a typed proxy read costs well
//! under half of what a name-dispatched one did (docs/performance.md).

use std::rc::Rc;

use digipology_kernel::ActionType;
use mlua::{Lua, MultiValue, Table, Value as LuaValue};

use crate::access::{text, READ_FIELDS};
use crate::slot::Slot;

/// The one-entity actions with a native of their own: (native name, action,
/// the payload key of its value, if it takes one). The entity goes under
/// `entityId`.
const ENTITY_ACTIONS: &[(&str, ActionType, Option<&str>)] = &[
    ("counter_add", ActionType::CounterAdd, Some("amount")),
    ("counter_set", ActionType::CounterSet, Some("value")),
    ("die_set_value", ActionType::DieSetValue, Some("value")),
    ("flip", ActionType::EntityFlip, None),
    ("roll", ActionType::DieRoll, None),
    ("set_text", ActionType::TextSet, Some("value")),
    ("set_locked", ActionType::EntitySetLocked, Some("locked")),
];

/// Three untyped arguments (a native that checks each itself, as the
/// handle readers do: a handle that is not an integer names no entity).
type Args3 = (LuaValue, LuaValue, LuaValue);

fn outside() -> mlua::Error {
    mlua::Error::runtime("the game can only be reached from inside a callback")
}

use crate::errors::NATIVE_CALL_COST;

/// Registers `name` in `table`: a Lua function taking `args` (typed by
/// mlua), whose body runs with `call` (the running callback's `Call`) and
/// `lua`. Each call is counted (`Shared::natives`) — except, with the
/// leading `storage_read`, a read of the script's own storage, which the
/// storage stamp already accounts for: a callback that made no counted
/// call read nothing but storage (see `LuaHost::match_step`).
macro_rules! native {
    ($table:ident, $lua_ctx:ident, $slot:ident, $name:expr,
     |$lua:ident, $call:ident, $args:tt : $ty:ty| $body:expr) => {{
        let s = $slot.clone();
        $table.raw_set(
            $name,
            $lua_ctx.create_function(move |$lua, $args: $ty| {
                s.with_current(|$call| {
                    $call.shared.note_native();
                    crate::errors::spend($call.shared, NATIVE_CALL_COST)?;
                    $body
                })
                .unwrap_or_else(|| Err(outside()))
            })?,
        )?;
    }};
    (storage_read $table:ident, $lua_ctx:ident, $slot:ident, $name:expr,
     |$lua:ident, $call:ident, $args:tt : $ty:ty| $body:expr) => {{
        let s = $slot.clone();
        $table.raw_set(
            $name,
            $lua_ctx.create_function(move |$lua, $args: $ty| {
                s.with_current(|$call| $body)
                    .unwrap_or_else(|| Err(outside()))
            })?,
        )?;
    }};
}

/// Builds the table of natives (the prelude's `N`).
pub fn natives(lua: &Lua, slot: &Rc<Slot>) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set(
        "FIELDS",
        lua.create_sequence_from(READ_FIELDS.iter().copied())?,
    )?;
    t.raw_set("storage_meta", crate::raw::storage_meta_factory(lua, slot)?)?;
    t.raw_set("storage_absent", crate::raw::absent_value())?;
    entity_natives(lua, slot, &t)?;
    game_natives(lua, slot, &t)?;
    write_natives(lua, slot, &t)?;
    crate::raw::raw_natives(lua, slot, &t)?;
    Ok(t)
}

/// Reads through an entity handle.
fn entity_natives(lua: &Lua, slot: &Rc<Slot>, t: &Table) -> mlua::Result<()> {
    native!(t, lua, slot, "read", |lua, c, (key, code): (i64, i64)| c
        .read_code(lua, key, code));
    native!(
        t,
        lua,
        slot,
        "alive",
        |_l, c, (key, id): (i64, LuaValue)| Ok(c.alive_key(key, &id))
    );
    native!(t, lua, slot, "lookup", |_l, c, id: LuaValue| Ok(
        c.lookup_key(&id)
    ));
    native!(t, lua, slot, "items", |lua, c, key: i64| c
        .item_handles(lua, key));
    native!(t, lua, slot, "component", |lua, c, (k, id, name): Args3| c
        .component(lua, &k, &id, &name));
    native!(t, lua, slot, "has", |_l, c, (k, id, name): Args3| c
        .has(&k, &id, &name));
    native!(t, lua, slot, "placement", |lua, c, key: i64| c
        .placement(lua, key));
    native!(
        t,
        lua,
        slot,
        "has_tag",
        |_l, c, (key, tag): (i64, LuaValue)| Ok(c.has_tag(key, &tag))
    );
    Ok(())
}

/// Reads of the game: entities by tag, players, seats, stacks, settings,
/// the running action, and storage.
fn game_natives(lua: &Lua, slot: &Rc<Slot>, t: &Table) -> mlua::Result<()> {
    native!(t, lua, slot, "entities", |lua, c, tag: LuaValue| c
        .entity_ids(lua, text(&tag)));
    native!(t, lua, slot, "player", |lua, c, id: LuaValue| c
        .player(lua, text(&id)));
    native!(t, lua, slot, "players", |lua, c, (): ()| c.players(lua));
    native!(t, lua, slot, "seats", |lua, c, (): ()| c.seats(lua));
    native!(t, lua, slot, "seat_of", |lua, c, player: LuaValue| c
        .seat_of(lua, text(&player).as_deref()));
    native!(t, lua, slot, "seat_player", |lua, c, seat: LuaValue| c
        .seat_player(lua, text(&seat).as_deref()));
    native!(t, lua, slot, "stack", |lua, c, id: LuaValue| c
        .stack_items(lua, text(&id)));
    native!(t, lua, slot, "settings", |lua, c, (): ()| c.settings(lua));
    native!(t, lua, slot, "match_book", |lua, c, (): ()| c
        .match_book(lua));
    native!(t, lua, slot, "sequence", |_l, c, (): ()| Ok(c.sequence()));
    native!(t, lua, slot, "action_id", |lua, c, (): ()| c.action_id(lua));
    native!(t, lua, slot, "actor", |lua, c, (): ()| c.actor(lua));
    native!(storage_read t, lua, slot, "storage_get", |lua,
                                          c,
                                          (script, path): (
        LuaValue,
        LuaValue
    )| c
        .storage_get(lua, &script, &path));
    native!(
        storage_read t,
        lua,
        slot,
        "storage_get_key",
        |lua, c, (script, key, parent): (LuaValue, LuaValue, LuaValue)| c
            .storage_get_key(lua, &script, &key, &parent)
    );
    native!(storage_read t, lua, slot, "storage_len", |_l,
                                          c,
                                          (script, path): (
        LuaValue,
        LuaValue
    )| c
        .storage_len(&script, &path));
    native!(storage_read t, lua, slot, "storage_keys", |lua,
                                           c,
                                           (script, path): (
        LuaValue,
        LuaValue
    )| c
        .storage_keys(lua, &script, &path));
    Ok(())
}

/// Writes (handlers only; elsewhere they answer `false, message, kind`),
/// ids and randomness.
fn write_natives(lua: &Lua, slot: &Rc<Slot>, t: &Table) -> mlua::Result<()> {
    // The hot one-entity actions, each one call: `(handle, id, value)`.
    for (name, ty, value_key) in ENTITY_ACTIONS {
        native!(t, lua, slot, *name, |lua,
                                      c,
                                      (key, id, value): (
            i64,
            LuaValue,
            LuaValue
        )| c
            .entity_action(lua, *ty, *value_key, key, &id, &value));
    }
    native!(t, lua, slot, "move_to", |lua,
                                      c,
                                      (key, id, to, index): (
        i64,
        LuaValue,
        LuaValue,
        LuaValue
    )| c
        .move_to(lua, key, &id, &to, &index));
    native!(t, lua, slot, "move_all", |lua,
                                       c,
                                       (key, id, to): (
        i64,
        LuaValue,
        LuaValue
    )| c
        .move_all(lua, key, &id, &to));
    native!(t, lua, slot, "submit", |lua, c, args: MultiValue| c
        .submit_args(lua, &args));
    native!(t, lua, slot, "storage_set", |lua,
                                          c,
                                          (
        script,
        path,
        value,
        parent,
    ): (
        LuaValue,
        LuaValue,
        LuaValue,
        LuaValue
    )| c.storage_set(
        lua,
        &script,
        (&path, &parent),
        &value
    ));
    native!(t, lua, slot, "remember_prompt", |lua,
                                              c,
                                              (
        id,
        cb,
        script,
        binding,
    ): (
        LuaValue,
        LuaValue,
        LuaValue,
        LuaValue
    )| c.remember_prompt(
        lua,
        &id,
        (cb, script, binding)
    ));
    native!(t, lua, slot, "remember_timer", |lua,
                                             c,
                                             (id, data): (
        LuaValue,
        LuaValue
    )| c
        .remember_timer(lua, &id, data));
    native!(t, lua, slot, "next_id", |lua, c, prefix: LuaValue| c
        .next_id(lua, text(&prefix)));
    native!(t, lua, slot, "random_float", |lua, c, (): ()| c
        .random_float(lua));
    native!(t, lua, slot, "random_below", |lua, c, n: LuaValue| c
        .random_below(lua, &n));
    Ok(())
}
