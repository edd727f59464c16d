//! The state one room's VM shares between the host, the instruction hook
//! and the native functions: the budget, the failure being raised, the
//! first refused subcommand, script `print` lines, id counters and caches.

use std::cell::{Cell, RefCell};

use digipology_kernel::ScriptErrorKind;
use mlua::Lua;
use rustc_hash::FxHashMap;

/// Flags shared between the host, the hook and native functions.
#[derive(Debug)]
pub struct Shared {
    pub(crate) remaining: Cell<i64>,
    pub(crate) exhausted: Cell<bool>,
    pub(crate) fail_kind: Cell<Option<ScriptErrorKind>>,
    /// The line of the innermost script frame when the running callback
    /// raised an error (recorded by the entry points' message handler, for
    /// errors whose text carries no position).
    pub(crate) fail_line: Cell<Option<u32>>,
    /// Whether that message handler ran for the running call's error (Lua
    /// does not run it for a memory error).
    pub(crate) located: Cell<bool>,
    pub(crate) doom: RefCell<Option<(String, ScriptErrorKind)>>,
    /// Values each script's storage holds, counted when a transaction
    /// first writes it (cleared with every transaction).
    pub(crate) storage_values: RefCell<Vec<(String, u64)>>,
    pub(crate) log: RefCell<Vec<String>>,
    pub(crate) ids: Cell<u32>,
    /// Lua strings of ids already passed to scripts: pushing one again
    /// needs no allocation (which mlua would protect with a `pcall`).
    pub(crate) strings: RefCell<FxHashMap<Box<str>, mlua::LuaString>>,
    /// The message of the last refused raw storage write (`raw.rs` raises
    /// it from here, so no Rust value is alive when Lua unwinds).
    pub(crate) refused: RefCell<String>,
    /// How many natives scripts called that read more than their own
    /// storage, or did something (counted, wrapping; compared before and
    /// after a callback).
    pub(crate) natives: Cell<u64>,
    /// The storage stamp the read caches are right for (`raw.rs`):
    /// 0, which names no storage, until a callback first checks it.
    pub(crate) storage_seen: Cell<u64>,
    /// The VM's main Lua state, for the switch that stops all Lua once
    /// the budget is spent ([`Shared::stop_lua`]); null until the host
    /// sets it.
    pub(crate) lua_state: Cell<*mut mlua::ffi::lua_State>,
    /// Set from another thread (a watchdog) to stop the running call: the
    /// instruction hook sees it within a thousand instructions and stops
    /// all Lua as a spent budget does.
    pub(crate) interrupt: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// The running call was stopped by [`Shared::interrupt`].
    pub(crate) interrupted: Cell<bool>,
    /// A read-only call is running ([`Shared::read_only`]).
    pub(crate) read_only: Cell<bool>,
}

#[allow(unsafe_code)]
mod switch {
    use std::ffi::c_int;
    extern "C-unwind" {
        /// The patched Lua's switch (third_party/lua-src, PATCHES.md):
        /// while set, no Lua function, instruction, `__close` method,
        /// message handler or resume runs, and every charge of C work
        /// raises.
        pub(super) fn lua_digisetdead(l: *mut mlua::ffi::lua_State, dead: c_int);
        /// How many instructions sooner than its count the running count
        /// hook came (a debt of C work brought it forward), cleared.
        pub(super) fn lua_digitakeunrun(l: *mut mlua::ffi::lua_State) -> c_int;
        /// Starts (1) or ends (0) a read-only call: nothing made before it
        /// may change while it runs.
        pub(super) fn lua_digireadonly(l: *mut mlua::ffi::lua_State, on: c_int);
    }
}

impl Shared {
    /// What a new VM starts with: `instructions` of budget, nothing else.
    pub(crate) fn new(instructions: i64) -> Shared {
        Shared {
            remaining: Cell::new(instructions),
            exhausted: Cell::new(false),
            fail_kind: Cell::new(None),
            fail_line: Cell::new(None),
            located: Cell::new(false),
            doom: RefCell::new(None),
            storage_values: RefCell::new(Vec::new()),
            log: RefCell::new(Vec::new()),
            storage_seen: Cell::new(0),
            ids: Cell::new(0),
            strings: RefCell::new(FxHashMap::default()),
            refused: RefCell::new(String::new()),
            natives: Cell::new(0),
            lua_state: Cell::new(std::ptr::null_mut()),
            interrupt: std::sync::Arc::default(),
            interrupted: Cell::new(false),
            read_only: Cell::new(false),
        }
    }

    /// Starts (`true`) or ends a read-only call (docs/lua-api.md, Reading
    /// leaves no trace): while it runs, the VM refuses changes to any
    /// table, local or coroutine made before it, and the runtime keeps
    /// nothing new of its own. Ending one also starts a new epoch, so
    /// `read_only(false)` once after the prelude has set up makes what the
    /// prelude made the runtime's own.
    #[allow(unsafe_code)]
    pub(crate) fn read_only(&self, on: bool) {
        self.read_only.set(on);
        let state = self.lua_state.get();
        if !state.is_null() {
            // SAFETY: as in `stop_lua`; the call sets two fields of the
            // global state.
            unsafe { switch::lua_digireadonly(state, c_int_of(on)) };
        }
    }

    /// Instructions the running count hook came before its count ran out
    /// (the VM brought it forward to collect a debt of C work), taken: the
    /// hook charges what ran, not its whole count.
    #[allow(unsafe_code)]
    pub(crate) fn take_unrun(&self) -> i64 {
        let state = self.lua_state.get();
        if state.is_null() {
            return 0;
        }
        // SAFETY: as in `stop_lua`: the VM's own main state, on its thread,
        // from its count hook; the call reads and clears one field of the
        // global state.
        i64::from(unsafe { switch::lua_digitakeunrun(state) })
    }

    /// Stops (`true`) or allows again (`false`) every Lua instruction of
    /// the VM: once the budget is spent nothing a script wrote runs — no
    /// `__close`, no message handler, no metamethod, no coroutine — until
    /// the host starts its next call.
    #[allow(unsafe_code)]
    pub(crate) fn stop_lua(&self, stop: bool) {
        let state = self.lua_state.get();
        if !state.is_null() {
            // SAFETY: `lua_state` is the main state of the VM this
            // `Shared` serves, set once the VM exists; the VM outlives
            // every caller (its hook, its natives, its host's methods),
            // and all of them run on the VM's own thread. The switch only
            // sets a byte of the global state (and the count of the
            // calling thread).
            unsafe { switch::lua_digisetdead(state, c_int_of(stop)) };
        }
    }

    /// Counts a native call (`natives`): the callback did more than read
    /// its own storage.
    pub(crate) fn note_native(&self) {
        self.natives.set(self.natives.get().wrapping_add(1));
    }

    /// `s` as a Lua string, from the cache of ids (at most 65,536 strings of
    /// at most 64 bytes are kept).
    pub fn string(&self, lua: &Lua, s: &str) -> mlua::Result<mlua::LuaString> {
        if let Some(v) = self.strings.borrow().get(s) {
            return Ok(v.clone());
        }
        let v = lua.create_string(s)?;
        let mut cache = self.strings.borrow_mut();
        // A read-only call adds nothing to the cache (it would keep the
        // string alive in the VM: a trace of the read).
        if s.len() <= 64 && cache.len() < 65_536 && !self.read_only.get() {
            cache.insert(s.into(), v.clone());
        }
        Ok(v)
    }

    /// Keeps `msg` as the last refusal: its bytes' address and length,
    /// valid until the next refusal.
    pub(crate) fn keep_refusal(&self, msg: String) -> (*const u8, usize) {
        let mut kept = self.refused.borrow_mut();
        *kept = msg;
        (kept.as_ptr(), kept.len())
    }

    /// Records the kind of the failure being raised.
    pub fn fail(&self, kind: ScriptErrorKind) {
        if self.fail_kind.get().is_none() {
            self.fail_kind.set(Some(kind));
        }
    }

    /// Records the first rejected subcommand of the transaction, with the
    /// kind it is reported as (`budget` for the cascade bound, else
    /// `subcommand`) — the same whether or not the script catches it.
    pub fn doom(&self, msg: &str, kind: ScriptErrorKind) {
        let mut d = self.doom.borrow_mut();
        if d.is_none() {
            *d = Some((msg.to_owned(), kind));
        }
    }

    /// How many values `script`'s storage holds (counted with `count` the
    /// first time in a transaction).
    pub fn storage_values(&self, script: &str, count: impl FnOnce() -> u64) -> u64 {
        if let Some((_, n)) = self
            .storage_values
            .borrow()
            .iter()
            .find(|(s, _)| s == script)
        {
            return *n;
        }
        let n = count();
        self.storage_values
            .borrow_mut()
            .push((script.to_owned(), n));
        n
    }

    /// Records how many values `script`'s storage holds after a write.
    pub fn set_storage_values(&self, script: &str, n: u64) {
        let mut all = self.storage_values.borrow_mut();
        match all.iter_mut().find(|(s, _)| s == script) {
            Some((_, v)) => *v = n,
            None => all.push((script.to_owned(), n)),
        }
    }

    /// The next number for a deterministic prompt/timer id.
    pub fn next_id(&self) -> u32 {
        let n = self.ids.get() + 1;
        self.ids.set(n);
        n
    }

    /// Instructions left in this transaction's budget.
    pub fn remaining(&self) -> i64 {
        self.remaining.get()
    }

    /// Charges `n` instructions of native work (a storage copy); false,
    /// with the budget marked exhausted, when it does not fit.
    pub fn charge_copy(&self, n: u64) -> bool {
        self.charge(i64::try_from(n).unwrap_or(i64::MAX))
    }

    pub(crate) fn charge(&self, n: i64) -> bool {
        let left = self.remaining.get().saturating_sub(n);
        self.remaining.set(left);
        if left <= 0 && !self.exhausted.get() {
            self.exhausted.set(true);
            self.stop_lua(true);
        }
        !self.exhausted.get()
    }
}

fn c_int_of(b: bool) -> std::ffi::c_int {
    std::ffi::c_int::from(b)
}
