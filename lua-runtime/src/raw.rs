//! The second place this crate uses `unsafe`: a script's most frequent
//! calls as C functions of their own — reading a key of `storage`
//! (`storage.turn`, `storage.board.c5`) and writing a scalar to one, as
//! the `__index` and `__newindex` of the prelude's root and top-level
//! `storage` nodes, and the natives behind `has_tag`, `seat_of`,
//! `placement` and `game.entity`.
//!
//! Through mlua, each was a native behind mlua's per-call machinery (its
//! error guard, a reference made and dropped for every argument and
//! result), a storage access also behind a Lua metamethod. These functions
//! read their arguments from the Lua stack, ask the running callback's
//! [`Call`](crate::access::Call) through the [`Slot`] — the same checks,
//! charges and answers as the path they stand in for — and push the
//! values. Anything out of the ordinary (an argument of another type, a
//! call outside a callback, a table written to storage) goes to that path,
//! kept as an upvalue, so its answers and errors stay what they were; an
//! error raised here names the script's line as the Lua path did.
//!
//! Safety rests on three rules, kept in each function: what a closure
//! points at (the [`Slot`], the [`Shared`]) lives as long as the Lua state
//! (the state's app data holds it); nothing with a destructor is alive while a Lua API call may
//! raise an error (Lua unwinds with `longjmp`); and no Rust panic leaves
//! the function.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::Rc;

use mlua::{ffi, Function, Lua, Table};

use crate::errors::BUDGET_MSG;
use crate::shared::Shared;
use crate::slot::{Erased, Slot};
use crate::storage::{cacheable, plain_write, Found, Key, Scalar, Wrote};

/// Keeps every `Rc<T>` (a [`Slot`], the [`Shared`]) raw closures point at
/// alive as long as the Lua state: app data is dropped after the state is
/// closed. Added to, never replaced: a closure made earlier keeps its own.
struct Kept<T>(#[allow(dead_code)] Vec<Rc<T>>);

/// Keeps `it` alive with the state; its address, for a light userdata.
fn keep<T: 'static>(lua: &Lua, it: &Rc<T>) -> *mut c_void {
    match lua.app_data_mut::<Kept<T>>() {
        Some(mut kept) => kept.0.push(it.clone()),
        None => {
            lua.set_app_data(Kept(vec![it.clone()]));
        }
    }
    Rc::as_ptr(it).cast_mut().cast::<c_void>()
}

/// A C closure of `f` over `it` (upvalue 1, a light userdata), which the
/// state keeps alive ([`keep`]).
fn closure_over<T: 'static>(
    lua: &Lua,
    it: &Rc<T>,
    f: ffi::lua_CFunction,
) -> mlua::Result<Function> {
    let ptr = keep(lua, it);
    // SAFETY: pushes one light userdata and makes a closure of it; the
    // pointer stays valid as long as the state.
    unsafe {
        lua.exec_raw((), |state| {
            ffi::lua_pushlightuserdata(state, ptr);
            ffi::lua_pushcclosure(state, f, 1);
        })
    }
}

extern "C-unwind" {
    /// The patched VM (third_party/lua-src, PATCHES.md): the table at
    /// `idx` is the runtime's own, never read-only.
    fn lua_digisystem(l: *mut ffi::lua_State, idx: c_int);
    /// Whether a read-only call is running.
    fn lua_digireadonlyon(l: *mut ffi::lua_State) -> c_int;
}

/// The error of a bug in one of these functions (a panic, caught).
const PANIC_MSG: &[u8] = b"internal error in the runtime (please report it)";

/// Bytes per instruction a string library call is charged (the prelude's
/// `BYTE_COST`).
const BYTE_COST: u64 = 4;

/// `core.charge_strings(...)`: charges the budget one instruction per
/// [`BYTE_COST`] bytes of the strings among its arguments (nothing under
/// one instruction's worth) and answers its arguments — the metering of a
/// string library call's arguments and results (sandbox.lua, `metered`).
pub(crate) fn charge_strings(lua: &Lua, shared: &Rc<Shared>) -> mlua::Result<Function> {
    closure_over(lua, shared, charge_strings_c)
}

unsafe extern "C-unwind" fn charge_strings_c(state: *mut ffi::lua_State) -> c_int {
    let n = ffi::lua_gettop(state);
    let mut bytes = 0u64;
    for i in 1..=n {
        if ffi::lua_type(state, i) == ffi::LUA_TSTRING {
            let len = u64::try_from(ffi::lua_rawlen(state, i)).unwrap_or(u64::MAX);
            bytes = bytes.saturating_add(len);
        }
    }
    let cost = bytes / BYTE_COST;
    if cost >= 1 {
        // SAFETY: upvalue 1 is the light userdata `charge_strings` made
        // from a live `Rc<Shared>`, kept alive with the state.
        let shared = &*ffi::lua_touserdata(state, ffi::lua_upvalueindex(1)).cast::<Shared>();
        // The result (an error, a panic's payload: both have destructors)
        // is dropped here, before anything can raise.
        let spent = catch_unwind(AssertUnwindSafe(|| {
            crate::errors::spend(shared, i64::try_from(cost).unwrap_or(i64::MAX)).is_ok()
        }))
        .map_err(|_| ());
        match spent {
            Ok(true) => {}
            Ok(false) => raise(state, BUDGET_MSG.as_bytes()),
            Err(_) => raise(state, PANIC_MSG),
        }
    }
    n
}

// The upvalues of a storage node's `__index` and `__newindex` closures.
const UP_SCRIPT: c_int = ffi::lua_upvalueindex(1);
const UP_TOP: c_int = ffi::lua_upvalueindex(2);
const UP_FALLBACK: c_int = ffi::lua_upvalueindex(3);
const UP_CHILD: c_int = ffi::lua_upvalueindex(4);
const UP_SET_FALLBACK: c_int = ffi::lua_upvalueindex(5);
const UP_FAIL: c_int = ffi::lua_upvalueindex(6);
const UP_CHILDREN: c_int = ffi::lua_upvalueindex(7);
const UP_CACHE: c_int = ffi::lua_upvalueindex(8);
const UP_SLOT: c_int = ffi::lua_upvalueindex(9);
const UPVALUES: c_int = 9;

/// `N.storage_meta(script, top, fallback, child, set_fallback, fail,
/// children, cached)`: the `__index` and `__newindex` of a storage node —
/// the root (`top` nil) or the table at top-level key `top`.
/// `fallback(node, key)` and `set_fallback(node, key, value, level)` are
/// the node's Lua metamethods, `child(key)` makes (or finds) the node of a
/// table a read found, and `fail(kind, message, level)` raises a refused
/// write as the Lua path does (the same counted instructions); `children`
/// is the root's table of the nodes it keeps, which `child` fills (a
/// top-level node gets its root's).
///
/// With `cached` (the root, and each top-level node the root keeps), the
/// `__index` is a table, the node's read cache: what its string keys were
/// last read as (scalars; nodes, at the root; the absent mark for a key
/// that holds nothing, which the VM answers as nil — lvm.c,
/// `luaV_digiabsent`), so a read that hits costs one table lookup and no
/// call; a key it lacks reaches the C `__index` (its metatable's), which
/// reads the state and fills it. Only reads that go uncharged may leave
/// anything there ([`cacheable`]), so a read costs the same whether it
/// hits, fills or neither.
/// A node's `__newindex` empties a key's entry before it writes the key
/// (and fills it with a written short string, boolean or integer before
/// the write, emptied again if the write fails); any string-keyed write
/// empties the cache of the node the root keeps for the key written (a
/// root's key, or a held node's own top-level key). Nothing
/// else changes those keys while a callback runs, and
/// [`LuaHost::call`](crate::host::LuaHost) empties every cache before a
/// callback when the storage changed since the caches were last right.
/// A cache holds at most [`CACHE_MAX`] entries (it starts over when full),
/// counted under the mark itself (a key no script can use), keeps no key or string longer than
/// [`CACHED_STRING_MAX`] bytes and no node the root does not keep; a cache whose count there is `false` is retired (its
/// node is no longer kept, `P.forget`) and never filled again.
pub(crate) fn storage_meta_factory(lua: &Lua, slot: &Rc<Slot>) -> mlua::Result<Function> {
    closure_over(lua, slot, storage_meta_new)
}

/// The most entries a read cache fills before it starts over (values and
/// absent marks alike):
/// what a cache keeps alive is bounded whatever a script reads, so what a
/// view or a dry run read leaves little for the next action's memory to
/// depend on.
const CACHE_MAX: i64 = 128;

/// The longest string a read cache keeps, as a value or as a key (Lua's
/// short strings): a long one is read again each time rather than kept
/// alive by the cache.
const CACHED_STRING_MAX: usize = 40;

/// Whether a key is short enough for a read cache to keep.
fn short_key(key: Key<'_>) -> bool {
    matches!(key, Key::Str(k) if k.len() <= CACHED_STRING_MAX)
}

/// The absent mark's address (lvm.c), pushed as a light userdata.
fn absent_mark() -> *mut c_void {
    // Only the static's address is taken; nothing reads or writes it
    // through this pointer (the VM compares addresses).
    std::ptr::addr_of!(luaV_digiabsent)
        .cast_mut()
        .cast::<c_void>()
}

extern "C" {
    /// The absent mark: a byte whose address the patched VM recognises in
    /// an `__index` table (third_party/lua-src, PATCHES.md).
    static luaV_digiabsent: c_char;
}

/// `N.storage_absent`: the absent mark, for the prelude to retire a cache
/// (set `false` under it). No script ever sees it.
pub(crate) fn absent_value() -> mlua::LightUserData {
    mlua::LightUserData(absent_mark())
}

/// The factory: checks its eight arguments and makes both closures over
/// them and the slot.
unsafe extern "C-unwind" fn storage_meta_new(state: *mut ffi::lua_State) -> c_int {
    let fine = ffi::lua_type(state, 1) == ffi::LUA_TSTRING
        && matches!(ffi::lua_type(state, 2), ffi::LUA_TSTRING | ffi::LUA_TNIL)
        && ffi::lua_type(state, 3) == ffi::LUA_TFUNCTION
        && ffi::lua_type(state, 4) == ffi::LUA_TFUNCTION
        && ffi::lua_type(state, 5) == ffi::LUA_TFUNCTION
        && ffi::lua_type(state, 6) == ffi::LUA_TFUNCTION
        && matches!(ffi::lua_type(state, 7), ffi::LUA_TTABLE | ffi::LUA_TNIL)
        && matches!(ffi::lua_type(state, 8), ffi::LUA_TBOOLEAN | ffi::LUA_TNIL);
    if !fine {
        raise(
            state,
            b"storage_meta(script, top, fallback, child, set_fallback, fail, children, cached): bad arguments",
        );
    }
    ffi::lua_settop(state, 8);
    let cached = ffi::lua_toboolean(state, 8) != 0;
    ffi::lua_pop(state, 1);
    // Slot 8: the node's cache (an upvalue of both closures), else nil.
    if cached {
        ffi::lua_createtable(state, 0, 8);
        // The runtime's own: written during any call, read-only ones too.
        lua_digisystem(state, -1);
    } else {
        ffi::lua_pushnil(state);
    }
    for f in [storage_index as ffi::lua_CFunction, storage_newindex] {
        for i in 1..UPVALUES {
            ffi::lua_pushvalue(state, i);
        }
        ffi::lua_pushvalue(state, ffi::lua_upvalueindex(1));
        ffi::lua_pushcclosure(state, f, UPVALUES);
    }
    // Slots 9 and 10: the closures. A cached node answers its cache as
    // its `__index`, the C `__index` behind it.
    if cached {
        ffi::lua_createtable(state, 0, 1);
        ffi::lua_pushvalue(state, 9);
        ffi::lua_setfield(state, -2, c"__index".as_ptr());
        ffi::lua_setmetatable(state, 8);
        ffi::lua_pushvalue(state, 8);
        ffi::lua_pushvalue(state, 10);
    }
    2
}

/// The natives of a guard's usual reads that answer plain arguments in C:
/// (name in `N`, function). Each keeps the mlua native it replaces as its
/// first upvalue and hands it any call it does not answer itself (an
/// argument of another type, a call outside a callback), so every answer
/// and error is the one that native gives.
const RAW_NATIVES: [(&str, ffi::lua_CFunction); 4] = [
    ("has_tag", raw_has_tag),
    ("seat_of", raw_seat_of),
    ("placement", raw_placement),
    ("lookup", raw_lookup),
];

/// What a raw native answers: plain values, a string borrowed from the
/// state or a constant (pushed before anything can change it).
#[derive(Clone, Copy)]
enum Out {
    Nil,
    Bool(bool),
    Int(i64),
    Str(*const u8, usize),
}

impl Out {
    fn str(s: &str) -> Out {
        Out::Str(s.as_ptr(), s.len())
    }

    fn opt_str(s: Option<&str>) -> Out {
        s.map_or(Out::Nil, Out::str)
    }
}

/// Replaces the natives of [`RAW_NATIVES`] in `n` (the prelude's `N`,
/// before the prelude runs) by their raw forms.
pub(crate) fn raw_natives(lua: &Lua, slot: &Rc<Slot>, n: &Table) -> mlua::Result<()> {
    let slot_ptr = keep(lua, slot);
    for (name, f) in RAW_NATIVES {
        let slow: Function = n.raw_get(name)?;
        // SAFETY: pushes the light userdata after the native (exec_raw's
        // argument) and makes a closure of both; the pointer stays valid
        // as long as the state (keep).
        let raw: Function = unsafe {
            lua.exec_raw(slow, |state| {
                ffi::lua_pushlightuserdata(state, slot_ptr);
                ffi::lua_pushcclosure(state, f, 2);
            })
        }?;
        n.raw_set(name, raw)?;
    }
    Ok(())
}

/// Runs `f` with the running callback's `Call` (counted as a native call)
/// and pushes its answers; outside a callback the mlua native answers.
unsafe fn answer<const N: usize>(
    state: *mut ffi::lua_State,
    f: impl FnOnce(&Erased) -> [Out; N],
) -> c_int {
    // SAFETY: upvalue 2 is the light userdata `raw_natives` made from a
    // live `Rc<Slot>`, kept alive with the state.
    let slot = &*ffi::lua_touserdata(state, ffi::lua_upvalueindex(2)).cast::<Slot>();
    let Ok(got) = catch_unwind(AssertUnwindSafe(|| {
        slot.with_current(|call| {
            call.shared.note_native();
            f(call)
        })
    })) else {
        raise(state, PANIC_MSG)
    };
    // Nothing below holds a destructor: `got` is plain data.
    let Some(outs) = got else {
        return slow(state);
    };
    for out in outs {
        match out {
            Out::Nil => ffi::lua_pushnil(state),
            Out::Bool(b) => ffi::lua_pushboolean(state, c_int::from(b)),
            Out::Int(i) => ffi::lua_pushinteger(state, i),
            // SAFETY: a constant, or a name in the state, which nothing
            // has changed since it was read.
            Out::Str(p, n) => {
                ffi::lua_pushlstring(state, p.cast::<c_char>(), n);
            }
        }
    }
    c_int::try_from(N).unwrap_or(0)
}

/// The mlua native (upvalue 1) called with this call's arguments; its
/// results.
unsafe fn slow(state: *mut ffi::lua_State) -> c_int {
    let args = ffi::lua_gettop(state);
    ffi::lua_pushvalue(state, ffi::lua_upvalueindex(1));
    ffi::lua_insert(state, 1);
    ffi::lua_call(state, args, ffi::LUA_MULTRET);
    ffi::lua_gettop(state)
}

/// The integer at `idx`, if it is one (a handle).
unsafe fn integer(state: *mut ffi::lua_State, idx: c_int) -> Option<i64> {
    (ffi::lua_isinteger(state, idx) != 0)
        .then(|| ffi::lua_tointegerx(state, idx, std::ptr::null_mut()))
}

/// The string at `idx` as text: `None` for another type, `Some(None)` for
/// bytes that are not UTF-8.
unsafe fn text<'a>(state: *mut ffi::lua_State, idx: c_int) -> Option<Option<&'a str>> {
    (ffi::lua_type(state, idx) == ffi::LUA_TSTRING)
        .then(|| std::str::from_utf8(bytes(state, idx)).ok())
}

/// `has_tag(key, tag)`: `live, has`.
unsafe extern "C-unwind" fn raw_has_tag(state: *mut ffi::lua_State) -> c_int {
    let Some(key) = integer(state, 1) else {
        return slow(state);
    };
    let tag = (ffi::lua_type(state, 2) == ffi::LUA_TSTRING).then(|| bytes(state, 2));
    answer(state, |call| {
        let (live, has) = call.has_tag_bytes(key, tag);
        [Out::Bool(live), Out::Bool(has)]
    })
}

/// `seat_of(player)`: the seat's name, or nil.
unsafe extern "C-unwind" fn raw_seat_of(state: *mut ffi::lua_State) -> c_int {
    let player = text(state, 1).flatten();
    answer(state, |call| {
        [Out::opt_str(player.and_then(|p| call.seat_name_of(p)))]
    })
}

/// `placement(key)`: `live, kind, id`.
unsafe extern "C-unwind" fn raw_placement(state: *mut ffi::lua_State) -> c_int {
    let Some(key) = integer(state, 1) else {
        return slow(state);
    };
    answer(state, |call| match call.placement_of(key) {
        Some((kind, id)) => [Out::Bool(true), Out::str(kind), Out::opt_str(id)],
        None => [Out::Bool(false), Out::Nil, Out::Nil],
    })
}

/// `lookup(id)`: the entity's handle, or nil.
unsafe extern "C-unwind" fn raw_lookup(state: *mut ffi::lua_State) -> c_int {
    let id = text(state, 1).flatten();
    answer(state, |call| {
        [id.and_then(|i| call.lookup_str(i))
            .map_or(Out::Nil, Out::Int)]
    })
}

/// The key (argument 2) of a storage node's metamethod, read in C: a
/// string, or below the root an integer. `Err(None)`: an integer key of
/// the root, which takes the Lua path (a path table); `Err(Some(type))`:
/// a key of another type.
unsafe fn node_key<'a>(state: *mut ffi::lua_State, root: bool) -> Result<Key<'a>, Option<c_int>> {
    match ffi::lua_type(state, 2) {
        ffi::LUA_TSTRING => Ok(Key::Str(bytes(state, 2))),
        ffi::LUA_TNUMBER if ffi::lua_isinteger(state, 2) != 0 => match root {
            false => Ok(Key::Int(ffi::lua_tointegerx(
                state,
                2,
                std::ptr::null_mut(),
            ))),
            true => Err(None),
        },
        other => Err(Some(other)),
    }
}

/// A storage node's `__index(node, key)`.
unsafe extern "C-unwind" fn storage_index(state: *mut ffi::lua_State) -> c_int {
    let root = ffi::lua_type(state, UP_TOP) == ffi::LUA_TNIL;
    let key = match node_key(state, root) {
        Ok(key) => key,
        Err(None) => return fallback(state),
        Err(Some(other)) => return bad_key(state, other),
    };
    let script = bytes(state, UP_SCRIPT);
    let parent = (!root).then(|| bytes(state, UP_TOP));
    // SAFETY: UP_SLOT is the light userdata `storage_meta_factory` made
    // from a live `Rc<Slot>`, kept alive with the state.
    let slot = &*ffi::lua_touserdata(state, UP_SLOT).cast::<Slot>();
    // A panic's payload is dropped here, before anything can raise.
    let Ok(found) = catch_unwind(AssertUnwindSafe(|| {
        slot.with_current(|call| call.storage_read(script, key, parent))
    })) else {
        raise(state, PANIC_MSG)
    };
    // Nothing below holds a destructor: `found` is plain data.
    let found = match found {
        Some(Ok(found)) => found,
        Some(Err(())) => raise(state, BUDGET_MSG.as_bytes()),
        // Outside a callback: the Lua path says what is wrong.
        None => return fallback(state),
    };
    let kept = push(state, found, root);
    // The cache keeps what a string key holds (integer keys stay out: a
    // float key such as 1.0 would find them and skip the refusal) — but
    // not a long string, nor a node the root does not keep (a new one is
    // made for each read of it, whatever was read before).
    let worth = short_key(key)
        && match found {
            Found::Str(_, n) => n <= CACHED_STRING_MAX,
            Found::Table => kept,
            _ => true,
        };
    if worth && cacheable(key, parent, found) {
        remember(state, matches!(found, Found::Nil));
    }
    1
}

/// The count of entries filled in the node's cache (`UP_CACHE`) since it
/// was last emptied (at least as many as it holds), or `None` when there is
/// no cache or it is retired.
unsafe fn live_cache(state: *mut ffi::lua_State) -> Option<i64> {
    if ffi::lua_type(state, UP_CACHE) != ffi::LUA_TTABLE {
        return None;
    }
    ffi::lua_pushlightuserdata(state, absent_mark());
    let count = match ffi::lua_rawget(state, UP_CACHE) {
        ffi::LUA_TNIL => Some(0),
        ffi::LUA_TNUMBER => Some(ffi::lua_tointegerx(state, -1, std::ptr::null_mut())),
        _ => None,
    };
    ffi::lua_pop(state, 1);
    count
}

/// Fills the cache's entry for the key (argument 2) with the value on top
/// of the stack, or with the absent mark when `absent`; a cache that is
/// full ([`CACHE_MAX`]) is emptied first.
unsafe fn remember(state: *mut ffi::lua_State, absent: bool) {
    // A read-only call fills no cache: what the caches hold depends on the
    // game's actions alone (docs/lua-api.md, Reading leaves no trace).
    if lua_digireadonlyon(state) != 0 {
        return;
    }
    let Some(mut count) = live_cache(state) else {
        return;
    };
    // A full cache starts over (its entries are only ever copies).
    if count >= CACHE_MAX {
        empty(state, UP_CACHE);
        count = 0;
    }
    ffi::lua_pushlightuserdata(state, absent_mark());
    ffi::lua_pushinteger(state, count + 1);
    ffi::lua_rawset(state, UP_CACHE);
    ffi::lua_pushvalue(state, 2);
    if absent {
        ffi::lua_pushlightuserdata(state, absent_mark());
    } else {
        ffi::lua_pushvalue(state, -2);
    }
    ffi::lua_rawset(state, UP_CACHE);
}

/// Empties the cache's entry for the key (argument 2). Setting nil
/// allocates nothing, so this cannot fail.
unsafe fn unremember(state: *mut ffi::lua_State) {
    ffi::lua_pushvalue(state, 2);
    ffi::lua_pushnil(state);
    ffi::lua_rawset(state, UP_CACHE);
}

/// Empties the table at `idx` (an absolute or pseudo index): a cache
/// starting over, its count included. Setting a present key to nil while
/// walking is allowed, and allocates nothing.
unsafe fn empty(state: *mut ffi::lua_State, idx: c_int) {
    ffi::lua_pushnil(state);
    while ffi::lua_next(state, idx) != 0 {
        ffi::lua_pop(state, 1);
        ffi::lua_pushvalue(state, -1);
        ffi::lua_pushnil(state);
        ffi::lua_rawset(state, idx);
    }
}

/// Empties the cache of the node the root keeps for a top-level key, if
/// it keeps one and it is not the node written (argument 1): the root's
/// key (argument 2), which the root is about to write; a top-level node's
/// own key, when the node written is one the root no longer keeps (a
/// script held it from an earlier match).
unsafe fn forget_child(state: *mut ffi::lua_State, root: bool) {
    if ffi::lua_type(state, UP_CHILDREN) != ffi::LUA_TTABLE {
        return;
    }
    ffi::lua_pushvalue(state, if root { 2 } else { UP_TOP });
    if ffi::lua_rawget(state, UP_CHILDREN) == ffi::LUA_TTABLE
        && ffi::lua_rawequal(state, -1, 1) == 0
        && ffi::lua_getmetatable(state, -1) != 0
    {
        ffi::lua_pushstring(state, c"__index".as_ptr());
        if ffi::lua_rawget(state, -2) == ffi::LUA_TTABLE {
            empty(state, ffi::lua_absindex(state, -1));
        }
        ffi::lua_pop(state, 2);
    }
    ffi::lua_pop(state, 1);
}

/// Pushes what a read found (a table through `child`): one value. (A
/// node is a view of its key's path, whatever the path holds later, so
/// the root's cache may keep it.)
/// Answers whether a node pushed is one the root keeps (`false` for
/// anything else).
unsafe fn push(state: *mut ffi::lua_State, found: Found, root: bool) -> bool {
    match found {
        Found::Nil => ffi::lua_pushnil(state),
        Found::Bool(b) => ffi::lua_pushboolean(state, c_int::from(b)),
        Found::Int(i) => ffi::lua_pushinteger(state, i),
        Found::Num(n) => ffi::lua_pushnumber(state, n),
        // SAFETY: the bytes of a string in the state's storage, which
        // nothing has changed since the read.
        Found::Str(p, n) => {
            ffi::lua_pushlstring(state, p.cast::<c_char>(), n);
        }
        Found::Table => {
            let children = root && ffi::lua_type(state, UP_CHILDREN) == ffi::LUA_TTABLE;
            // A node the root kept: no call into Lua.
            if children {
                ffi::lua_pushvalue(state, 2);
                if ffi::lua_rawget(state, UP_CHILDREN) != ffi::LUA_TNIL {
                    return true;
                }
                ffi::lua_pop(state, 1);
            }
            ffi::lua_pushvalue(state, UP_CHILD);
            ffi::lua_pushvalue(state, 2);
            ffi::lua_call(state, 1, 1);
            // Made now: kept if the root had room for it.
            if children {
                ffi::lua_pushvalue(state, 2);
                ffi::lua_rawget(state, UP_CHILDREN);
                let kept = ffi::lua_rawequal(state, -1, -2) != 0;
                ffi::lua_pop(state, 1);
                return kept;
            }
        }
    }
    false
}

/// A storage node's `__newindex(node, key, value)`: a scalar at a string
/// key (or, below the root, an integer one) is written here; anything
/// else goes to the node's Lua `__newindex`.
unsafe extern "C-unwind" fn storage_newindex(state: *mut ffi::lua_State) -> c_int {
    let root = ffi::lua_type(state, UP_TOP) == ffi::LUA_TNIL;
    let key = match node_key(state, root) {
        Ok(key) => key,
        Err(None) => return set_fallback(state),
        Err(Some(other)) => return bad_key(state, other),
    };
    // The cache forgets the key before anything writes it, and so does the
    // node the root keeps for it (setting nil allocates nothing, so this
    // cannot fail).
    let string_key = matches!(key, Key::Str(_));
    let cache = string_key && ffi::lua_type(state, UP_CACHE) == ffi::LUA_TTABLE;
    if cache {
        unremember(state);
    }
    if string_key {
        forget_child(state, root);
    }
    let value = match ffi::lua_type(state, 3) {
        ffi::LUA_TNIL => Scalar::Nil,
        ffi::LUA_TBOOLEAN => Scalar::Bool(ffi::lua_toboolean(state, 3) != 0),
        ffi::LUA_TNUMBER if ffi::lua_isinteger(state, 3) != 0 => {
            Scalar::Int(ffi::lua_tointegerx(state, 3, std::ptr::null_mut()))
        }
        ffi::LUA_TNUMBER => Scalar::Num(ffi::lua_tonumberx(state, 3, std::ptr::null_mut())),
        ffi::LUA_TSTRING => Scalar::Str(bytes(state, 3)),
        _ => return set_fallback(state),
    };
    if !plain_write(key, value) {
        return set_fallback(state);
    }
    // A short string, a boolean or an integer reads back as written (a
    // float may read back as an integer, so it is read again): the cache
    // takes it before the write, so running out of memory there leaves
    // the write undone, and gives it up if the write fails.
    let fill = cache
        && short_key(key)
        && match value {
            Scalar::Str(v) => v.len() <= CACHED_STRING_MAX,
            Scalar::Bool(_) | Scalar::Int(_) => true,
            Scalar::Nil | Scalar::Num(_) => false,
        };
    if fill {
        ffi::lua_pushvalue(state, 3);
        remember(state, false);
        ffi::lua_pop(state, 1);
    }
    let script = bytes(state, UP_SCRIPT);
    let parent = (!root).then(|| bytes(state, UP_TOP));
    // SAFETY: as in `storage_index`.
    let slot = &*ffi::lua_touserdata(state, UP_SLOT).cast::<Slot>();
    // A panic's payload is dropped here, before anything can raise.
    let wrote = catch_unwind(AssertUnwindSafe(|| {
        slot.with_current(|call| call.storage_write(script, key, parent, value))
    }))
    .map_err(drop);
    // Nothing below holds a destructor: `wrote` is plain data. A write not
    // done (a panic too) takes its value out of the cache again.
    if fill && !matches!(wrote, Ok(Some(Wrote::Done))) {
        unremember(state);
    }
    let Ok(wrote) = wrote else {
        raise(state, PANIC_MSG)
    };
    match wrote {
        Some(Wrote::Done) => 0,
        Some(Wrote::Budget) => raise(state, BUDGET_MSG.as_bytes()),
        Some(Wrote::Refused(kind, p, n)) => refuse(state, kind, p, n),
        None => set_fallback(state),
    }
}

/// The node's Lua `__newindex(node, key, value, level)`, told to report an
/// error at the script's line (two levels above itself: this function is
/// between).
unsafe fn set_fallback(state: *mut ffi::lua_State) -> c_int {
    ffi::lua_pushvalue(state, UP_SET_FALLBACK);
    ffi::lua_pushvalue(state, 1);
    ffi::lua_pushvalue(state, 2);
    ffi::lua_pushvalue(state, 3);
    ffi::lua_pushinteger(state, 3);
    ffi::lua_call(state, 4, 0);
    0
}

/// The node's Lua `__index(node, key)`, answered as it answers.
unsafe fn fallback(state: *mut ffi::lua_State) -> c_int {
    ffi::lua_pushvalue(state, UP_FALLBACK);
    ffi::lua_pushvalue(state, 1);
    ffi::lua_pushvalue(state, 2);
    ffi::lua_call(state, 2, 1);
    1
}

/// The error of a key that is neither a string nor an integer, at the
/// line of the script that used it.
unsafe fn bad_key(state: *mut ffi::lua_State, ty: c_int) -> c_int {
    ffi::luaL_where(state, 1);
    let msg = b"storage keys must be strings or integers, not ";
    ffi::lua_pushlstring(state, msg.as_ptr().cast::<c_char>(), msg.len());
    ffi::lua_pushstring(state, ffi::lua_typename(state, ty));
    ffi::lua_concat(state, 3);
    ffi::lua_error(state)
}

/// Raises a refused write through the prelude's `fail(kind, message,
/// level)`, as the Lua `__newindex` does: at the script's line (two levels
/// up: `fail`, then this function), its kind recorded, the same counted
/// instructions run.
unsafe fn refuse(state: *mut ffi::lua_State, kind: &'static str, p: *const u8, n: usize) -> c_int {
    ffi::lua_pushvalue(state, UP_FAIL);
    ffi::lua_pushlstring(state, kind.as_ptr().cast::<c_char>(), kind.len());
    // SAFETY: the message kept in `Shared`, untouched until the next
    // refusal; pushing it copies it before anything else can run.
    ffi::lua_pushlstring(state, p.cast::<c_char>(), n);
    ffi::lua_pushinteger(state, 2);
    ffi::lua_call(state, 3, 0);
    0
}

/// Raises `msg` as a string error.
unsafe fn raise(state: *mut ffi::lua_State, msg: &[u8]) -> ! {
    ffi::lua_pushlstring(state, msg.as_ptr().cast::<c_char>(), msg.len());
    ffi::lua_error(state)
}

/// The bytes of the string at `idx` (valid while it stays on the stack or
/// in its upvalue).
unsafe fn bytes<'a>(state: *mut ffi::lua_State, idx: c_int) -> &'a [u8] {
    let mut len = 0usize;
    let p = ffi::lua_tolstring(state, idx, &mut len);
    if p.is_null() {
        return &[];
    }
    std::slice::from_raw_parts(p.cast::<u8>(), len)
}
