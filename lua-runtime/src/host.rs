//! `LuaHost`: one sandboxed Lua VM serving a room's scripts, and the one way
//! it calls into Lua ([`LuaHost::call`]: the native access of the callback
//! installed, failures mapped). Built in `vm.rs`; the kernel's script-host
//! trait is implemented in `dispatch.rs`; stored prompt/timer callbacks are
//! run by `callbacks.rs`.

use std::rc::Rc;

use digipology_kernel::{Id, ScriptErrorKind, ScriptFailure};
use mlua::{Function, Lua, Table, Value as LuaValue};
use rustc_hash::FxHashMap;

use crate::access::{Access, Call};
use crate::errors::{classify, Failed};
use crate::shared::Shared;
use crate::slot::Slot;
use crate::spec::Limits;

/// The first two results of a callback (a guard's answer and reason).
pub(crate) type Ret = (LuaValue, LuaValue);

/// What a prelude entry point answers (`host.lua`): `true, r1, r2`, or
/// `false, message` when the callback raised a string error. Any other
/// error comes back from mlua as `Err`.
pub(crate) type Answer = (LuaValue, LuaValue, LuaValue);

/// (binding index, function, function name) for one event type.
pub(crate) type HandlerList = Vec<(usize, Function, &'static str)>;

/// The match step closure (`host.lua`, `P.match_stepper`) built around
/// the game's functions and seats.
pub(crate) struct Stepper {
    /// The closure.
    pub(crate) call: Function,
    /// Which of current_phase, is_ready, is_terminal and participation the
    /// game defines.
    pub(crate) defined: [bool; 4],
    /// The binding of the first of them (`usize::MAX`: none).
    pub(crate) index: usize,
    /// The seats it asks about, in order.
    pub(crate) seats: Vec<String>,
}

/// What `current_phase()` answered, against the phase the room had.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PhaseAnswer {
    /// The same phase.
    Unchanged,
    /// Another phase, by name.
    Named(String),
    /// No phase (nil, or not a string).
    None,
}

/// The game's answers to the match layer's questions after an action
/// ([`LuaHost::match_step`](crate::LuaHost::match_step)); `None` for a function the game does not
/// define.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MatchAnswers {
    /// `current_phase()`.
    pub phase: Option<PhaseAnswer>,
    /// `is_ready()` is true (when asked).
    pub ready: Option<bool>,
    /// `is_terminal()` is true (when asked).
    pub terminal: Option<bool>,
    /// `participation(seat)` for each seat, in order.
    pub participation: Option<Vec<&'static str>>,
}

/// A match step's answers and what they were answered under: the storage
/// stamp, the questions asked (is_ready, is_terminal) and the last phase.
/// Kept only when the game's functions called no native but storage reads.
pub(crate) struct StepMemo {
    pub(crate) stamp: u64,
    pub(crate) asked: (bool, bool),
    pub(crate) last_phase: Option<String>,
    pub(crate) answers: MatchAnswers,
}

/// One loaded binding: its ids, its entity (if any) and the table of the
/// globals its script defined.
pub(crate) struct Binding {
    pub(crate) script_id: Id,
    pub(crate) binding_id: Id,
    pub(crate) entity: Option<String>,
    pub(crate) defs: Table,
}

/// One sandboxed Lua VM serving a room's scripts.
pub struct LuaHost {
    pub(crate) lua: Lua,
    pub(crate) shared: Rc<Shared>,
    pub(crate) limits: Limits,
    pub(crate) bindings: Vec<Binding>,
    pub(crate) slot: Rc<Slot>,
    /// The prelude's entry points (`host.lua`): guard, act, handle,
    /// callback, query.
    pub(crate) guard_call: Function,
    pub(crate) handle_call: Function,
    pub(crate) handle_many_call: Function,
    pub(crate) callback_call: Function,
    pub(crate) query_call: Function,
    pub(crate) act_call: Function,
    pub(crate) match_stepper: Function,
    /// The prelude's `forget`: drops what earlier matches left in the
    /// runtime's own Lua caches.
    pub(crate) forget_call: Function,
    /// The read caches of `storage` (`raw.rs`): each script's root's and
    /// those of the top-level nodes the roots keep, a list the prelude
    /// keeps (`forget_storage_nodes`).
    pub(crate) storage_caches: Table,
    /// Each binding's modules being loaded (`host.lua`, `LOADING`):
    /// emptied before a call when the last one was stopped (by its budget
    /// or the watchdog), which may have been inside a module's body.
    pub(crate) loading: Table,
    /// The last call was stopped: `loading` may hold a module it left.
    pub(crate) stopped_last: std::cell::Cell<bool>,
    /// The match step built around the game's functions (on first use).
    pub(crate) stepper: std::cell::RefCell<Option<Stepper>>,
    /// The last match step's answers, when they can be reused.
    pub(crate) step_memo: std::cell::RefCell<Option<StepMemo>>,
    /// The next [`LuaHost::call`] is a read-only one (a view, a game
    /// function answering a question).
    pub(crate) next_read_only: std::cell::Cell<bool>,
    pub(crate) seq: u64,
    pub(crate) guards: FxHashMap<&'static str, Rc<Vec<(usize, Function)>>>,
    pub(crate) handlers: FxHashMap<&'static str, Rc<HandlerList>>,
    pub(crate) has_handlers: bool,
    /// Global functions looked up by name (the game module's), found once:
    /// a host's bindings never change (a reload builds a new host).
    pub(crate) globals: std::cell::RefCell<FxHashMap<String, Option<(usize, Function)>>>,
}

impl LuaHost {
    /// Whether binding `binding` of script `script` defines a global
    /// function `name` (to report callbacks a reload made vanish).
    pub fn has_function(&self, script: &str, binding: &str, name: &str) -> bool {
        self.bindings.iter().any(|b| {
            &*b.script_id == script
                && &*b.binding_id == binding
                && matches!(b.defs.raw_get::<LuaValue>(name), Ok(LuaValue::Function(_)))
        })
    }

    /// Forgets what earlier matches left outside the state — printed
    /// lines, a pending failure, the runtime's caches (strings, modules
    /// required during play, storage nodes, guard proxies) — for a room
    /// that starts another match with the same scripts, so it holds what
    /// a new room would besides the scripts' own tables and locals.
    ///
    /// # Errors
    /// The prelude's `forget` failed (a bug of ours).
    pub fn forget_match(&self) -> mlua::Result<()> {
        self.shared.log.borrow_mut().clear();
        *self.shared.doom.borrow_mut() = None;
        self.shared.storage_values.borrow_mut().clear();
        self.shared.strings.borrow_mut().clear();
        *self.step_memo.borrow_mut() = None;
        // The runtime's own work, never short of what the last callback
        // left of its budget. (The prelude's `forget` empties every
        // storage read cache as it drops the nodes the roots kept.)
        self.reset_budget();
        self.stopped_last.set(true);
        self.forget_call.call::<()>(())
    }

    /// A switch another thread may set to stop this host's Lua (a
    /// watchdog): the running call ends within a thousand instructions (or
    /// one charge of C work) as if its budget were spent, with
    /// [`STALLED_MSG`](crate::STALLED_MSG), and every later call
    /// fails the same way at once, until the switch is cleared.
    pub fn interrupt(&self) -> std::sync::Arc<std::sync::atomic::AtomicBool> {
        self.shared.interrupt.clone()
    }

    /// Whether the last call (or one since the switch was set) was
    /// stopped by [`LuaHost::interrupt`].
    pub fn was_interrupted(&self) -> bool {
        self.shared.interrupted.get()
    }

    /// Lines scripts printed since the last call (not canonical).
    pub fn take_log(&self) -> Vec<String> {
        std::mem::take(&mut *self.shared.log.borrow_mut())
    }

    /// Bytes the VM uses now.
    pub fn memory_bytes(&self) -> usize {
        self.lua.used_memory()
    }

    /// A full budget for the next transaction, question or view — counted
    /// from its first instruction: the count hook is set again, so where
    /// the budget runs out never depends on how many instructions earlier
    /// calls left over (a view, a dry run, a question the room did not
    /// need to ask again).
    pub(crate) fn reset_budget(&self) {
        self.shared
            .remaining
            .set(i64::try_from(self.limits.instructions_max).unwrap_or(i64::MAX));
        // A host told to stop (`LuaHost::interrupt`) runs no Lua at all
        // until it is told to go on.
        let stopped = self
            .shared
            .interrupt
            .load(std::sync::atomic::Ordering::Relaxed);
        self.shared.exhausted.set(stopped);
        self.shared.interrupted.set(stopped);
        self.shared.stop_lua(stopped);
        // Setting the hook cannot fail in practice; if it did, the hook set
        // before would still count (from where it was).
        let _ = crate::errors::arm_budget(&self.lua, &self.shared);
    }

    /// Calls `f` through the prelude's protected invoker with the native
    /// access of this callback. Returns the results, or (message, line,
    /// kind).
    pub(crate) fn call(
        &self,
        invoke: impl FnOnce() -> mlua::Result<Answer>,
        access: Access<'_, '_, '_>,
        script_id: &Id,
        binding_id: &Id,
    ) -> Result<Ret, Failed> {
        self.shared.fail_kind.set(None);
        self.shared.fail_line.set(None);
        self.shared.located.set(false);
        // Taken first: whatever happens below, it is this call's alone.
        let wants_read_only = self.next_read_only.replace(false);
        let mut call = Call {
            access,
            script_id,
            binding_id,
            seq: self.seq,
            shared: &self.shared,
        };
        // The read caches answer for the storage they were last
        // right for: storage changed since (a rollback, another match, a
        // state restored) empties them, before any script reads.
        let stamp = call.state().storage_stamp();
        if self.shared.storage_seen.get() != stamp {
            if let Err(e) = self.clear_storage_caches() {
                return Err((e.to_string(), None, ScriptErrorKind::Runtime));
            }
            self.shared.storage_seen.set(stamp);
        }
        if self.stopped_last.get() {
            // No Lua runs: the budget is not touched.
            for t in self.loading.sequence_values::<Table>() {
                if let Err(e) = t.and_then(|t| t.clear()) {
                    return Err((e.to_string(), None, ScriptErrorKind::Runtime));
                }
            }
            self.stopped_last.set(false);
        }
        // A read-only call of its own (not one inside a dry run, which is
        // read-only from its start to its end).
        let read_only = wants_read_only && !self.shared.read_only.get();
        if read_only {
            self.shared.read_only(true);
        }
        let result = self.slot.enter(&mut call, invoke);
        if self.shared.exhausted.get() {
            self.stopped_last.set(true);
        }
        if read_only {
            self.shared.read_only(false);
        }
        let mut failure = match result {
            // A string error, caught by the entry point: Lua's own text, no
            // traceback to build and strip.
            Ok((LuaValue::Boolean(false), LuaValue::String(msg), _)) => {
                let msg = msg.to_string_lossy();
                // Lua's own memory error skips the message handler; a script
                // raising that text does not.
                if msg == "not enough memory"
                    && !self.shared.located.get()
                    && !self.shared.exhausted.get()
                {
                    // Named with the setting, as `classify` names it.
                    classify(&self.shared, &self.limits, msg, true)
                } else {
                    // The script's own text: `classify` treats it as it
                    // treats mlua's text of a runtime error, less mlua's
                    // prefix.
                    classify(&self.shared, &self.limits, msg, true)
                }
            }
            Ok((_, a, b)) => return Ok((a, b)),
            Err(mlua::Error::MemoryError(_)) => (
                "not enough memory".to_owned(),
                None,
                ScriptErrorKind::Memory,
            ),
            Err(e) => classify(&self.shared, &self.limits, e.to_string(), false),
        };
        // A message without a script position takes the line of the
        // innermost script frame when the error was raised (what the
        // traceback's first script line used to give).
        if failure.1.is_none()
            && !matches!(failure.2, ScriptErrorKind::Budget | ScriptErrorKind::Memory)
        {
            failure.1 = self.shared.fail_line.get();
        }
        // Only a memory error needs the heap swept now (so the next action
        // starts with room); ordinary garbage is the collector's business.
        if failure.2 == ScriptErrorKind::Memory {
            let _ = self.lua.gc_collect();
        }
        Err(failure)
    }

    /// Empties every read cache of `storage` (no Lua runs: the
    /// budget is not touched).
    pub(crate) fn clear_storage_caches(&self) -> mlua::Result<()> {
        for cache in self.storage_caches.sequence_values::<Table>() {
            cache?.clear()?;
        }
        Ok(())
    }

    /// The script failure of `function` in binding `b`.
    pub(crate) fn failure(
        &self,
        b: &Binding,
        function: &str,
        (message, line, kind): Failed,
    ) -> ScriptFailure {
        ScriptFailure {
            script_id: String::from(&*b.script_id),
            binding_id: String::from(&*b.binding_id),
            function: function.to_owned(),
            line,
            message,
            kind,
        }
    }
}
