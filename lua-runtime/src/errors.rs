//! Error mapping: a Lua error becomes a creator-facing message, line and
//! kind (`script.error`), a compile error a [`LoadError`]; guard reasons and
//! messages are bounded; the count hook that turns a spent instruction
//! budget into a `budget` error.

use std::rc::Rc;

use digipology_kernel::ScriptErrorKind;
use mlua::{HookTriggers, Lua, VmState};

use crate::shared::Shared;
use crate::spec::{Limits, LoadError};

/// The message of an exhausted instruction budget.
pub(crate) const BUDGET_MSG: &str = "instruction budget exceeded";

/// The message of a call the host stopped from outside
/// ([`LuaHost::interrupt`](crate::LuaHost::interrupt)).
pub const STALLED_MSG: &str =
    "the host stopped the game: this call ran longer than the host allows (it stalled)";

/// The start of the VM's refusal of a change during a read-only call
/// (`DIGI_RO_MSG`, third_party/lua-src/lua-5.4.9/lstate.h).
const READ_ONLY_MSG: &str = "a read-only call cannot change";

/// (message, line, kind) of a failed call.
pub(crate) type Failed = (String, Option<u32>, ScriptErrorKind);

/// Maps a Lua error message to (message, line, kind): the budget and
/// memory limits are named with the setting that raises them; otherwise the
/// kind the sandbox recorded (runtime when none), the script's line, and the
/// message without mlua's decoration.
///
/// `msg` is mlua's text of the error (`runtime error: …`, maybe with a
/// traceback), or with `raw` the error string itself, as a script's handler
/// raised it.
pub(crate) fn classify(shared: &Shared, limits: &Limits, msg: String, raw: bool) -> Failed {
    if shared.interrupted.get() {
        return (STALLED_MSG.to_owned(), None, ScriptErrorKind::Budget);
    }
    if shared.exhausted.get() {
        let msg = format!(
            "{BUDGET_MSG} ({} instructions per action; game.json limits.instructionsMax or run --instructions-max sets it)",
            limits.instructions_max
        );
        return (msg, None, ScriptErrorKind::Budget);
    }
    if msg == "not enough memory" || msg.contains("not enough memory") {
        let msg = format!(
            "memory limit exceeded ({} bytes per room; game.json limits.memoryBytesMax or run --memory-max sets it)",
            limits.memory_bytes_max
        );
        return (msg, None, ScriptErrorKind::Memory);
    }
    // The VM's refusal of a change in a read-only call (third_party/lua-src).
    let kind = if msg.contains(READ_ONLY_MSG) {
        ScriptErrorKind::GuardMutation
    } else {
        shared.fail_kind.get().unwrap_or(ScriptErrorKind::Runtime)
    };
    let line = line_of(&msg);
    (clean(msg, raw), line, kind)
}

/// A compile error as a [`LoadError`], with its line.
pub(crate) fn syntax_error(file: &str, e: &mlua::Error) -> LoadError {
    let message = match e {
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        // The parser itself ran out of room (nesting too deep for the C
        // stack): say so plainly, without the traceback mlua appends.
        mlua::Error::RuntimeError(m) if m.contains("stack overflow") => {
            return LoadError::Syntax {
                file: file.to_owned(),
                line: 0,
                message: "the script nests too deeply to be read (expressions or blocks thousands of levels deep); flatten it".into(),
            };
        }
        other => other.to_string(),
    };
    let line = line_of(&message).unwrap_or(0);
    // Lua's message starts with "file:line: "; the error shows those apart.
    let prefix = format!("{file}:{line}: ");
    let message = message
        .strip_prefix(&prefix)
        .map(str::to_owned)
        .unwrap_or(message);
    LoadError::Syntax {
        file: file.to_owned(),
        line,
        message,
    }
}

/// Longest guard reason kept, in bytes (a longer one is cut at a character
/// boundary and marked with `…`).
pub const REASON_BYTES_MAX: usize = 1000;

/// The first [`REASON_BYTES_MAX`] bytes of `bytes` as text, cut at a
/// character boundary.
pub(crate) fn truncated(bytes: &[u8]) -> String {
    if bytes.len() <= REASON_BYTES_MAX {
        return String::from_utf8_lossy(bytes).into_owned();
    }
    let mut end = REASON_BYTES_MAX;
    while end > 0 && (bytes[end] & 0xC0) == 0x80 {
        end -= 1;
    }
    let mut s = String::from_utf8_lossy(&bytes[..end]).into_owned();
    s.push('…');
    s
}

/// The line of the first `file.lua:12:` position in a message that is not
/// in the prelude, if there is one.
pub fn line_of(msg: &str) -> Option<u32> {
    let mut from = 0;
    while let Some(i) = msg[from..].find(".lua:") {
        let idx = from + i;
        from = idx + 5;
        if msg[..idx].ends_with("prelude") {
            continue;
        }
        let digits: String = msg[idx + 5..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        if let Ok(n) = digits.parse() {
            return Some(n);
        }
    }
    None
}

/// Longest error message kept, in characters.
const MESSAGE_CHARS_MAX: usize = 2000;

/// A message without mlua's `runtime error: ` prefix (unless `raw`: then
/// there is none to take off) and stack traceback, with no memory address
/// (an error object that is a table, function or userdata without
/// `__tostring` is described by its type), cut at [`MESSAGE_CHARS_MAX`]
/// characters. Most messages need none of it and are kept as they are.
fn clean(msg: String, raw: bool) -> String {
    let mut text = msg.as_str();
    if !raw {
        text = text.strip_prefix("runtime error: ").unwrap_or(text);
    }
    if text.contains('\n') {
        text = text.split("\nstack traceback:").next().unwrap_or(text);
    }
    for kind in ["table", "function", "userdata", "thread"] {
        if let Some(rest) = text.strip_prefix(kind).and_then(|r| r.strip_prefix(": 0x")) {
            if rest.chars().all(|c| c.is_ascii_hexdigit()) {
                return format!("(error object is a {kind} value)");
            }
        }
    }
    if text.len() > MESSAGE_CHARS_MAX && text.chars().count() > MESSAGE_CHARS_MAX {
        let cut: String = text.chars().take(MESSAGE_CHARS_MAX).collect();
        return format!("{cut}...");
    }
    if text.len() == msg.len() {
        return msg;
    }
    text.to_owned()
}

/// Instructions every call of a native costs besides what it builds or
/// walks (crossing into the host costs several instructions' worth:
/// benches/charges.rs). Storage reads charge their own (`storage.rs`).
pub(crate) const NATIVE_CALL_COST: i64 = 4;

/// Instructions between two budget checks.
const HOOK_EVERY: u32 = 1000;

/// Sets the instruction budget's count hook: every [`HOOK_EVERY`]
/// instructions it charges the budget, and stops the script once the
/// budget is spent. Setting it starts its count afresh, which
/// [`LuaHost::reset_budget`](crate::LuaHost) relies on.
///
/// The hook itself never raises: an error raised from inside a count hook
/// unwinds through frames whose to-be-closed variables mlua would close
/// with hooks off (a `__close` that loops would then run for ever).
/// Instead it stops all Lua ([`Shared::stop_lua`]) and the patched VM
/// raises the budget error at the instruction the hook interrupted.
pub(crate) fn arm_budget(lua: &Lua, shared: &Rc<Shared>) -> mlua::Result<()> {
    let hook_shared = shared.clone();
    lua.set_global_hook(
        HookTriggers::new().every_nth_instruction(HOOK_EVERY),
        move |_, _| {
            let s = &hook_shared;
            if s.interrupt.load(std::sync::atomic::Ordering::Relaxed) && !s.interrupted.get() {
                s.interrupted.set(true);
                s.fail(ScriptErrorKind::Budget);
                s.exhausted.set(true);
                s.stop_lua(true);
            }
            let ran = i64::from(HOOK_EVERY) - s.take_unrun();
            let _ = spend(s, ran.max(0));
            Ok(VmState::Continue)
        },
    )
}

/// Charges `n` instructions to the budget: the `budget` error (the failure
/// kind recorded) once it is spent. The count hook, `core.charge` and the
/// storage natives all charge through it.
pub(crate) fn spend(shared: &Shared, n: i64) -> mlua::Result<()> {
    if shared.charge(n) {
        Ok(())
    } else {
        shared.fail(ScriptErrorKind::Budget);
        Err(mlua::Error::runtime(BUDGET_MSG))
    }
}
