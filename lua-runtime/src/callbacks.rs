//! Stored callbacks: a prompt's answer goes to the function stored with the
//! prompt, a timer's fire to the function named in its registration (with
//! the timer's stored data). The record is removed when it answers, fires
//! or is canceled (`records.rs` keeps them).

use digipology_kernel::{Event, EventKind, ScriptCtx, ScriptErrorKind, ScriptFailure, Value};
use mlua::{MultiValue, Value as LuaValue};

use crate::convert::to_lua;
use crate::host::LuaHost;
use crate::records::{forget, prompt_callback, timer_data, Section, StoredCallback};

/// A stored callback due now: whose function, with what value.
struct Due {
    section: Section,
    id: String,
    to: StoredCallback,
    value: Value,
}

impl LuaHost {
    /// Delivers a prompt's answer or a timer's fire to its stored callback;
    /// a cancel forgets the record.
    pub(crate) fn stored_callback(
        &mut self,
        ctx: &mut ScriptCtx<'_, '_>,
        event: &Event,
    ) -> Result<(), ScriptFailure> {
        let Some(due) = due(ctx, event) else {
            return Ok(());
        };
        let Due {
            section,
            id,
            to,
            value,
        } = due;
        let missing = |what: String| ScriptFailure {
            script_id: to.script.clone(),
            binding_id: to.binding.clone(),
            function: to.callback.clone(),
            line: None,
            message: what,
            kind: ScriptErrorKind::Runtime,
        };
        let Some(index) = self
            .bindings
            .iter()
            .position(|b| *b.script_id == *to.script && *b.binding_id == *to.binding)
        else {
            return Err(missing(format!(
                "callback '{}': script \"{}\" binding \"{}\" no longer exists",
                to.callback, to.script, to.binding
            )));
        };
        let Ok(LuaValue::Function(f)) = self.bindings[index]
            .defs
            .raw_get::<LuaValue>(to.callback.as_str())
        else {
            return Err(missing(format!(
                "callback '{}' no longer exists in script \"{}\" (it was stored with this {})",
                to.callback,
                to.script,
                section.noun()
            )));
        };
        forget(ctx, section, &id);
        let mut args = vec![to_lua(&self.lua, &value).map_err(|e| missing(e.to_string()))?];
        args.extend(self.event_args(event).map_err(|e| missing(e.to_string()))?);
        let n = i64::try_from(args.len().saturating_sub(4)).unwrap_or(0);
        args.insert(4, LuaValue::Integer(n));
        let call = &self.callback_call;
        let invoke = || {
            let all: MultiValue = std::iter::once(LuaValue::Function(f.clone()))
                .chain(args)
                .collect();
            call.call(all)
        };
        self.run_handler(ctx, index, &to.callback, invoke)
    }
}

/// The stored callback this event is due to reach, if any. A canceled
/// prompt or timer will never call back: its record is forgotten here, so
/// canceled timers leave nothing behind in canonical storage.
fn due(ctx: &mut ScriptCtx<'_, '_>, event: &Event) -> Option<Due> {
    match &event.kind {
        EventKind::PromptCanceled { prompt_id, .. } => {
            forget(ctx, Section::Prompts, prompt_id);
            None
        }
        EventKind::TimerCanceled { timer_id } => {
            forget(ctx, Section::Timers, timer_id);
            None
        }
        EventKind::PromptResponded {
            prompt_id,
            response,
            ..
        } => Some(Due {
            section: Section::Prompts,
            id: prompt_id.to_string(),
            to: prompt_callback(ctx.state(), prompt_id)?,
            value: response.clone(),
        }),
        EventKind::TimerFired { timer_id, target } => Some(Due {
            section: Section::Timers,
            id: timer_id.to_string(),
            to: StoredCallback {
                callback: target.callback.clone(),
                script: target.script_id.clone(),
                binding: target.binding_id.clone(),
            },
            value: timer_data(ctx.state(), timer_id),
        }),
        // Only these four events touch stored callbacks.
        _ => None,
    }
}
