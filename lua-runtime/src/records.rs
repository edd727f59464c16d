//! The runtime's own records in canonical storage (`storage["@runtime"]`):
//! where a prompt's answer goes (`prompts[id]`: callback, script, binding)
//! and what a timer carries (`timers[id]`: data). Kept in the state, so a
//! response or a fire reaches the right function after a replay, a save or a
//! hot reload. Written here when a script creates a prompt or timer, read
//! and removed by the host (`callbacks.rs`) when it answers, fires or is
//! canceled.

use std::collections::BTreeMap;

use digipology_kernel::{ScriptCtx, State, Value};
use mlua::{Lua, MultiValue, Value as LuaValue};

use crate::access::{ok_true, refusal, text, Access, Call};
use crate::convert::to_value_with;
use digipology_kernel::bytes::{value_bytes, VALUE_BYTES};

/// The storage entry the runtime keeps its own records in. Scripts write
/// only their own storage, and script ids may not start with `@`.
pub const RUNTIME_STORAGE: &str = "@runtime";

/// A kind of record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Section {
    /// `prompts[id]`: a prompt's stored callback.
    Prompts,
    /// `timers[id]`: a timer's data.
    Timers,
}

impl Section {
    /// Its key under `storage["@runtime"]`.
    pub fn key(self) -> &'static str {
        match self {
            Section::Prompts => "prompts",
            Section::Timers => "timers",
        }
    }

    /// What the record belongs to, in messages.
    pub fn noun(self) -> &'static str {
        match self {
            Section::Prompts => "prompt",
            Section::Timers => "timer",
        }
    }
}

/// Where a prompt's answer (or a timer's fire) goes: a function of one
/// binding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredCallback {
    /// The function's name.
    pub callback: String,
    /// Its script.
    pub script: String,
    /// Its binding.
    pub binding: String,
}

impl StoredCallback {
    /// Reads a stored record; `None` unless it has all three strings.
    fn from_value(v: &Value) -> Option<StoredCallback> {
        let Value::Object(m) = v else {
            return None;
        };
        let text = |k: &str| match m.get(k) {
            Some(Value::String(s)) => Some(s.clone()),
            _ => None,
        };
        Some(StoredCallback {
            callback: text("callback")?,
            script: text("script")?,
            binding: text("binding")?,
        })
    }
}

/// The record `section[id]`, if there is one.
fn record<'s>(state: &'s State, section: Section, id: &str) -> Option<&'s Value> {
    let Some(Value::Object(runtime)) = state.storage().get(RUNTIME_STORAGE) else {
        return None;
    };
    match runtime.get(section.key()) {
        Some(Value::Object(m)) => m.get(id),
        _ => None,
    }
}

/// The callback stored with prompt `id`, if any.
pub fn prompt_callback(state: &State, id: &str) -> Option<StoredCallback> {
    record(state, Section::Prompts, id).and_then(StoredCallback::from_value)
}

/// The data stored with timer `id` (null when none was given).
pub fn timer_data(state: &State, id: &str) -> Value {
    match record(state, Section::Timers, id) {
        Some(Value::Object(m)) => m.get("data").cloned().unwrap_or(Value::Null),
        _ => Value::Null,
    }
}

/// Removes the record `section[id]`, if any (and the section, and the
/// runtime root, when they become empty).
pub fn forget(ctx: &mut ScriptCtx<'_, '_>, section: Section, id: &str) {
    if record(ctx.state(), section, id).is_none() {
        return;
    }
    let len = |s: &str| u64::try_from(s.len()).unwrap_or(u64::MAX);
    // In place, like a record made (`Call::remember`): what it frees is
    // the record and its id, and the section when it empties.
    let root = ctx.storage_root_mut(RUNTIME_STORAGE);
    let mut freed = 0u64;
    if let Value::Object(sections) = root {
        if let Some(Value::Object(m)) = sections.get_mut(section.key()) {
            if let Some(old) = m.remove(id) {
                freed = len(id).saturating_add(value_bytes(&old));
            }
            if m.is_empty() {
                sections.remove(section.key());
                freed = freed
                    .saturating_add(len(section.key()))
                    .saturating_add(VALUE_BYTES);
            }
        }
    }
    ctx.storage_resized(0, freed);
    if matches!(ctx.storage_root_mut(RUNTIME_STORAGE), Value::Object(o) if o.is_empty()) {
        ctx.set_storage(RUNTIME_STORAGE, None);
    }
}

impl Call<'_, '_, '_> {
    /// `remember_prompt(id, callback, script, binding)`: stores where the
    /// prompt's answer goes. `true`, or `false, message, kind`.
    pub fn remember_prompt(
        &mut self,
        lua: &Lua,
        id: &LuaValue,
        (callback, script, binding): (LuaValue, LuaValue, LuaValue),
    ) -> mlua::Result<MultiValue> {
        let t = lua.create_table()?;
        t.raw_set("callback", callback)?;
        t.raw_set("script", script)?;
        t.raw_set("binding", binding)?;
        self.remember(lua, Section::Prompts, id, &LuaValue::Table(t))
    }

    /// `remember_timer(id, data)`: stores the data a timer's callback
    /// receives. `true`, or `false, message, kind`.
    pub fn remember_timer(
        &mut self,
        lua: &Lua,
        id: &LuaValue,
        data: LuaValue,
    ) -> mlua::Result<MultiValue> {
        let t = lua.create_table()?;
        t.raw_set("data", data)?;
        self.remember(lua, Section::Timers, id, &LuaValue::Table(t))
    }

    fn remember(
        &mut self,
        lua: &Lua,
        section: Section,
        id: &LuaValue,
        record: &LuaValue,
    ) -> mlua::Result<MultiValue> {
        if let Some((msg, kind)) = self.write_refusal("create prompts or timers") {
            return refusal(lua, &msg, kind);
        }
        let id = text(id).unwrap_or_default();
        let bytes_max = self.bytes_left();
        let converted = self.convert(crate::convert::VALUES_MAX, bytes_max, || {
            to_value_with(record, &|t, d| self.storage_of(t, d))
        });
        let record = match converted {
            Ok(v) => v,
            Err((m, kind)) => return refusal(lua, &format!("cannot store this value: {m}"), kind),
        };
        let Access::Handler(ctx) = &mut self.access else {
            return ok_true();
        };
        // What the record adds to the room's held bytes: it (and its id),
        // the section when it is new; less a record it replaces. The root
        // itself is counted when the transaction first makes it.
        let key = section.key();
        let len = |s: &str| u64::try_from(s.len()).unwrap_or(u64::MAX);
        let section_now = match ctx.state().storage().get(RUNTIME_STORAGE) {
            Some(Value::Object(o)) => o.get(key),
            _ => None,
        };
        let (grown, shrunk) = match section_now {
            Some(Value::Object(map)) => match map.get(&id) {
                Some(old) => (value_bytes(&record), value_bytes(old)),
                None => (len(&id).saturating_add(value_bytes(&record)), 0),
            },
            _ => (
                len(key)
                    .saturating_add(VALUE_BYTES)
                    .saturating_add(len(&id))
                    .saturating_add(value_bytes(&record)),
                0,
            ),
        };
        if let Err(m) = ctx.storage_fits(grown, shrunk) {
            return refusal(
                lua,
                &format!("cannot store this {}: {m}", section.noun()),
                "memory",
            );
        }
        // In place: one rollback copy of the records per transaction, not
        // a copy of every record for every new one.
        let root = ctx.storage_root_mut(RUNTIME_STORAGE);
        if !matches!(root, Value::Object(_)) {
            *root = Value::Object(BTreeMap::new());
        }
        if let Value::Object(sections) = root {
            let entry = sections
                .entry(key.to_owned())
                .or_insert_with(|| Value::Object(BTreeMap::new()));
            if let Value::Object(map) = entry {
                map.insert(id, record);
            }
        }
        ctx.storage_resized(grown, shrunk);
        ok_true()
    }
}
