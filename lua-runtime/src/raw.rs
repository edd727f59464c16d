//! The second place this crate uses `unsafe`: a script's most frequent
//! call — reading a key of `storage` (`storage.turn`, `storage.board.c5`) —
//! as a C function of its own, the `__index` of the prelude's root and
//! top-level `storage` nodes.
//!
//! Through mlua, such a read was a Lua metamethod calling a native: a Lua
//! frame, then mlua's per-call machinery (its error guard, a reference made
//! and dropped for every argument and result). This function reads the key
//! from the Lua stack, asks [`Call::storage_read`] (the same charge and the
//! same answer as the `storage_get_key` native) through the [`Slot`], and
//! pushes the value. Anything out of the ordinary — an integer key of the
//! root, a read outside a callback — goes to the node's Lua `__index`,
//! which the closure keeps as an upvalue; a key of the wrong type is the
//! same error, at the same line, as before.
//!
//! Safety rests on three rules, kept in the one function that needs them:
//! the [`Slot`] a closure points at lives as long as the Lua state (the
//! state's app data holds it); nothing with a destructor is alive while a
//! Lua API call may raise an error (Lua unwinds with `longjmp`); and no
//! Rust panic leaves the function.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::Rc;

use mlua::{ffi, Function, Lua};

use crate::errors::BUDGET_MSG;
use crate::slot::Slot;
use crate::storage::{plain_write, Found, Key, Scalar, Wrote};

/// Keeps every [`Slot`] raw closures point at alive as long as the Lua
/// state (app data is dropped after the state is closed).
struct KeepSlots(#[allow(dead_code)] Vec<Rc<Slot>>);

/// The error of a bug in the runtime's own read or write (a panic, caught).
const PANIC_MSG: &[u8] =
    b"internal error in the runtime reading or writing storage (please report it)";

// The upvalues of a storage node's `__index` and `__newindex` closures.
const UP_SCRIPT: c_int = ffi::lua_upvalueindex(1);
const UP_TOP: c_int = ffi::lua_upvalueindex(2);
const UP_FALLBACK: c_int = ffi::lua_upvalueindex(3);
const UP_CHILD: c_int = ffi::lua_upvalueindex(4);
const UP_SET_FALLBACK: c_int = ffi::lua_upvalueindex(5);
const UP_FAIL: c_int = ffi::lua_upvalueindex(6);
const UP_SLOT: c_int = ffi::lua_upvalueindex(7);
const UPVALUES: c_int = 7;

/// `N.storage_meta(script, top, fallback, child, set_fallback, fail)`: the
/// `__index` and `__newindex` of a storage node — the root (`top` nil) or
/// the table at top-level key `top`. `fallback(node, key)` and
/// `set_fallback(node, key, value, level)` are the node's Lua metamethods,
/// `child(key)` makes (or finds) the node of a table a read found, and
/// `fail(kind, message, level)` raises a refused write as the Lua path
/// does (the same counted instructions).
pub(crate) fn storage_meta_factory(lua: &Lua, slot: &Rc<Slot>) -> mlua::Result<Function> {
    // Added to, never replaced: a closure made earlier keeps its slot.
    match lua.app_data_mut::<KeepSlots>() {
        Some(mut kept) => kept.0.push(slot.clone()),
        None => {
            lua.set_app_data(KeepSlots(vec![slot.clone()]));
        }
    }
    let slot_ptr = Rc::as_ptr(slot).cast_mut().cast::<c_void>();
    // SAFETY: pushes one light userdata and makes a closure of it; the
    // pointer stays valid as long as the state (KeepSlots above).
    unsafe {
        lua.exec_raw((), |state| {
            ffi::lua_pushlightuserdata(state, slot_ptr);
            ffi::lua_pushcclosure(state, storage_meta_new, 1);
        })
    }
}

/// The factory: checks its six arguments and makes both closures over
/// them and the slot.
unsafe extern "C-unwind" fn storage_meta_new(state: *mut ffi::lua_State) -> c_int {
    let fine = ffi::lua_type(state, 1) == ffi::LUA_TSTRING
        && matches!(ffi::lua_type(state, 2), ffi::LUA_TSTRING | ffi::LUA_TNIL)
        && ffi::lua_type(state, 3) == ffi::LUA_TFUNCTION
        && ffi::lua_type(state, 4) == ffi::LUA_TFUNCTION
        && ffi::lua_type(state, 5) == ffi::LUA_TFUNCTION
        && ffi::lua_type(state, 6) == ffi::LUA_TFUNCTION;
    if !fine {
        raise(
            state,
            b"storage_meta(script, top, fallback, child, set_fallback, fail): bad arguments",
        );
    }
    ffi::lua_settop(state, 6);
    for f in [storage_index as ffi::lua_CFunction, storage_newindex] {
        for i in 1..UPVALUES {
            ffi::lua_pushvalue(state, i);
        }
        ffi::lua_pushvalue(state, ffi::lua_upvalueindex(1));
        ffi::lua_pushcclosure(state, f, UPVALUES);
    }
    2
}

/// A storage node's `__index(node, key)`.
unsafe extern "C-unwind" fn storage_index(state: *mut ffi::lua_State) -> c_int {
    let root = ffi::lua_type(state, UP_TOP) == ffi::LUA_TNIL;
    let key = match ffi::lua_type(state, 2) {
        ffi::LUA_TSTRING => Key::Str(bytes(state, 2)),
        // The root's integer keys take the general path (a path table).
        ffi::LUA_TNUMBER if ffi::lua_isinteger(state, 2) != 0 && !root => {
            Key::Int(ffi::lua_tointegerx(state, 2, std::ptr::null_mut()))
        }
        ffi::LUA_TNUMBER if ffi::lua_isinteger(state, 2) != 0 => return fallback(state),
        other => return bad_key(state, other),
    };
    let script = bytes(state, UP_SCRIPT);
    let parent = (!root).then(|| bytes(state, UP_TOP));
    // SAFETY: UP_SLOT is the light userdata `storage_index_factory` made
    // from a live `Rc<Slot>`, kept alive with the state.
    let slot = &*ffi::lua_touserdata(state, UP_SLOT).cast::<Slot>();
    // A panic's payload is dropped here, before anything can raise.
    let Ok(found) = catch_unwind(AssertUnwindSafe(|| {
        slot.with_current(|call| call.storage_read(script, key, parent))
    })) else {
        raise(state, PANIC_MSG)
    };
    // Nothing below holds a destructor: `found` is plain data.
    match found {
        Some(Ok(found)) => push(state, found),
        Some(Err(())) => raise(state, BUDGET_MSG.as_bytes()),
        // Outside a callback: the Lua path says what is wrong.
        None => fallback(state),
    }
}

/// Pushes what a read found (a table through `child`); one result.
unsafe fn push(state: *mut ffi::lua_State, found: Found) -> c_int {
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
            ffi::lua_pushvalue(state, UP_CHILD);
            ffi::lua_pushvalue(state, 2);
            ffi::lua_call(state, 1, 1);
        }
    }
    1
}

/// A storage node's `__newindex(node, key, value)`: a scalar at a string
/// key (or, below the root, an integer one) is written here; anything
/// else goes to the node's Lua `__newindex`.
unsafe extern "C-unwind" fn storage_newindex(state: *mut ffi::lua_State) -> c_int {
    let root = ffi::lua_type(state, UP_TOP) == ffi::LUA_TNIL;
    let key = match ffi::lua_type(state, 2) {
        ffi::LUA_TSTRING => Key::Str(bytes(state, 2)),
        ffi::LUA_TNUMBER if ffi::lua_isinteger(state, 2) != 0 && !root => {
            Key::Int(ffi::lua_tointegerx(state, 2, std::ptr::null_mut()))
        }
        ffi::LUA_TNUMBER if ffi::lua_isinteger(state, 2) != 0 => return set_fallback(state),
        other => return bad_key(state, other),
    };
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
    let script = bytes(state, UP_SCRIPT);
    let parent = (!root).then(|| bytes(state, UP_TOP));
    // SAFETY: as in `storage_index`.
    let slot = &*ffi::lua_touserdata(state, UP_SLOT).cast::<Slot>();
    let Ok(wrote) = catch_unwind(AssertUnwindSafe(|| {
        slot.with_current(|call| call.storage_write(script, key, parent, value))
    })) else {
        raise(state, PANIC_MSG)
    };
    // Nothing below holds a destructor: `wrote` is plain data.
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
