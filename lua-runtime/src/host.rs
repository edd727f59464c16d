//! `LuaHost`: one sandboxed Lua VM per room, implementing the kernel's
//! script-host trait.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;

use rustc_hash::FxHashMap;
use std::rc::Rc;

use digipology_kernel::{
    Event, EventKind, GuardKind, GuardRequest, Id, ScriptCtx, ScriptErrorKind, ScriptFailure,
    ScriptHost, State, Value, Verdict,
};
use mlua::chunk::ChunkMode;
use mlua::{
    Function, HookTriggers, Lua, LuaOptions, MultiValue, StdLib, Table, Value as LuaValue, VmState,
};

use crate::access::{Access, Call, RUNTIME_STORAGE};
use crate::convert::{number, to_lua};
use crate::shared::Shared;
use crate::slot::Slot;
use digipology_kernel::event::Field;

/// The creator API, embedded.
pub const PRELUDE: &str = include_str!("../../prelude.lua");

/// `pairs` order of 24 string keys that every correctly built VM shows (see
/// `.cargo/config.toml`); checked at start-up.
const PAIRS_SELFTEST: &str =
    "k14,k18,k24,k23,k13,k17,k10,k20,k3,k2,k1,k22,k21,k11,k4,k16,k9,k15,k19,k8,k6,k7,k12,k5";

/// Instructions between two budget checks.
const HOOK_EVERY: u32 = 1000;

/// Resource limits of a room's VM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Lua VM instructions one transaction (or one script's loading) may run.
    pub instructions_max: u64,
    /// Bytes the whole VM may allocate.
    pub memory_bytes_max: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            instructions_max: 10_000_000,
            memory_bytes_max: 64 * 1024 * 1024,
        }
    }
}

/// A script from `game.json`, with its source text.
#[derive(Clone, Debug)]
pub struct ScriptSpec {
    /// Script id.
    pub id: String,
    /// Path as shown in messages (`scripts/main.lua`).
    pub file: String,
    /// Source text.
    pub source: String,
    /// Its bindings.
    pub bindings: Vec<BindingSpec>,
}

/// A binding: global (no entity) or bound to one entity.
#[derive(Clone, Debug)]
pub struct BindingSpec {
    /// Binding id.
    pub id: String,
    /// The bound entity, if any.
    pub entity: Option<String>,
}

/// A module `require` can load: name (`util.cards`) → (file, source).
pub type Modules = BTreeMap<String, (String, String)>;

/// Why the scripts could not load.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// A script does not compile.
    #[error("{}: syntax error: {message}", place(file, *line))]
    Syntax {
        /// File.
        file: String,
        /// Line (0 when unknown).
        line: u32,
        /// Lua's message.
        message: String,
    },
    /// A script's top-level chunk failed.
    #[error("{file}: error while loading: {message}")]
    Runtime {
        /// File.
        file: String,
        /// Message (with its line).
        message: String,
    },
    /// A binding names an entity that does not exist.
    #[error("script \"{script}\" binding \"{binding}\": {message}")]
    Binding {
        /// Script id.
        script: String,
        /// Binding id.
        binding: String,
        /// What is wrong.
        message: String,
    },
    /// The VM could not be set up.
    #[error("Lua runtime: {0}")]
    Internal(String),
}

/// `file:line`, or just `file` when the line is unknown (0).
fn place(file: &str, line: u32) -> String {
    if line == 0 {
        file.to_owned()
    } else {
        format!("{file}:{line}")
    }
}

/// The first two results of a callback (a guard's answer and reason; mlua
/// runs every call under `lua_pcall`; errors come back as `Err`).
type Ret = (LuaValue, LuaValue);

/// (binding index, function, function name) for one event type.
type HandlerList = Vec<(usize, Function, &'static str)>;

struct Binding {
    script_id: Id,
    binding_id: Id,
    entity: Option<String>,
    defs: Table,
}

/// One sandboxed Lua VM serving a room's scripts.
pub struct LuaHost {
    lua: Lua,
    shared: Rc<Shared>,
    limits: Limits,
    bindings: Vec<Binding>,
    slot: Rc<Slot>,
    guard_call: Function,
    handle_call: Function,
    callback_call: Function,
    seq: u64,
    guards: FxHashMap<&'static str, Rc<Vec<(usize, Function)>>>,
    handlers: FxHashMap<&'static str, Rc<HandlerList>>,
    has_handlers: bool,
}

const BUDGET_MSG: &str = "instruction budget exceeded";

impl LuaHost {
    /// Builds the VM, loads the prelude and every script binding against the
    /// starting state.
    ///
    /// # Errors
    /// A syntax or load error (with file and line), a binding to a missing
    /// entity, or a VM that fails its determinism self-test.
    pub fn new(
        scripts: &[ScriptSpec],
        modules: Modules,
        state: &State,
        limits: Limits,
    ) -> Result<LuaHost, LoadError> {
        let internal = |e: mlua::Error| LoadError::Internal(e.to_string());
        let libs = StdLib::TABLE | StdLib::STRING | StdLib::MATH | StdLib::UTF8 | StdLib::COROUTINE;
        let lua = Lua::new_with(libs, LuaOptions::default()).map_err(internal)?;
        let shared = Rc::new(Shared {
            remaining: Cell::new(limits.instructions_max as i64),
            exhausted: Cell::new(false),
            fail_kind: Cell::new(None),
            doom: RefCell::new(None),
            storage_values: RefCell::new(Vec::new()),
            log: RefCell::new(Vec::new()),
            ids: Cell::new(0),
            strings: RefCell::new(FxHashMap::default()),
        });
        let hook_shared = shared.clone();
        lua.set_global_hook(
            HookTriggers::new().every_nth_instruction(HOOK_EVERY),
            move |_, _| {
                if hook_shared.charge(i64::from(HOOK_EVERY)) {
                    Ok(VmState::Continue)
                } else {
                    hook_shared.fail(ScriptErrorKind::Budget);
                    Err(mlua::Error::runtime(BUDGET_MSG))
                }
            },
        )
        .map_err(internal)?;
        let core = make_core(&lua, &shared, modules).map_err(internal)?;
        let cur = lua.create_table().map_err(internal)?;
        let slot = Rc::new(Slot::new());
        let k_slot = slot.clone();
        let k = lua
            .create_function(move |lua, args: MultiValue| {
                match k_slot.with_current(|c| c.op(lua, args)) {
                    Some(r) => r,
                    None => Err(mlua::Error::runtime(
                        "the game can only be reached from inside a callback",
                    )),
                }
            })
            .map_err(internal)?;
        cur.raw_set("k", k).map_err(internal)?;
        let natives = crate::native::natives(&lua, &slot).map_err(internal)?;
        let prelude: Table = lua
            .load(PRELUDE)
            .set_name("=prelude.lua")
            .set_mode(ChunkMode::Text)
            .call((core, cur.clone(), lua.globals(), natives))
            .map_err(internal)?;
        let order: String = prelude
            .get::<Function>("selftest")
            .and_then(|f| f.call(()))
            .map_err(internal)?;
        if order != PAIRS_SELFTEST {
            return Err(LoadError::Internal(format!(
                "this build of Lua iterates tables in a process-dependent order (got {order}); \
                 it was built without the flags in .cargo/config.toml: run `cargo clean -p mlua-sys` and rebuild"
            )));
        }
        lua.set_memory_limit(limits.memory_bytes_max)
            .map_err(internal)?;
        // Scripted actions make short-lived tables (events, proxies): the
        // generational collector handles those far more cheaply.
        lua.gc_set_mode(mlua::state::GcMode::Generational(
            mlua::state::GcGenParams::default(),
        ));
        let get = |name: &str| prelude.get::<Function>(name).map_err(internal);
        let mut host = LuaHost {
            guard_call: get("guard")?,
            handle_call: get("handle")?,
            callback_call: get("callback")?,
            lua,
            shared,
            limits,
            bindings: Vec::new(),
            slot,
            seq: state.sequence,
            guards: FxHashMap::default(),
            handlers: FxHashMap::default(),
            has_handlers: false,
        };
        let new_env = get("new_env")?;
        for script in scripts {
            for b in &script.bindings {
                host.load_binding(&new_env, script, b, state)?;
            }
        }
        // Stored prompt/timer callbacks can reach any binding, so any script
        // means events are delivered.
        host.has_handlers = !host.bindings.is_empty();
        Ok(host)
    }

    fn load_binding(
        &mut self,
        new_env: &Function,
        script: &ScriptSpec,
        b: &BindingSpec,
        state: &State,
    ) -> Result<(), LoadError> {
        let internal = |e: mlua::Error| LoadError::Internal(e.to_string());
        let key = match &b.entity {
            Some(id) => match state.key(id) {
                Some(k) => Some(k),
                None => {
                    return Err(LoadError::Binding {
                        script: script.id.clone(),
                        binding: b.id.clone(),
                        message: format!("binds entity \"{id}\", which does not exist"),
                    })
                }
            },
            None => None,
        };
        let spec = self.lua.create_table().map_err(internal)?;
        spec.set("script", script.id.as_str()).map_err(internal)?;
        spec.set("binding", b.id.as_str()).map_err(internal)?;
        if let (Some(id), Some(k)) = (&b.entity, key) {
            use slotmap::Key;
            spec.set("entity_id", id.as_str()).map_err(internal)?;
            spec.set("entity_key", k.data().as_ffi() as i64)
                .map_err(internal)?;
        }
        let (env, defs, freeze): (Table, Table, Function) = new_env.call(spec).map_err(internal)?;
        let chunk = self
            .lua
            .load(&script.source)
            .set_name(format!("={}", script.file))
            .set_mode(ChunkMode::Text)
            .set_environment(env)
            .into_function()
            .map_err(|e| syntax_error(&script.file, &e))?;
        self.reset_budget();
        let (script_id, binding_id) = (Id::from(script.id.as_str()), Id::from(b.id.as_str()));
        let outcome = self.call(
            || chunk.call::<Ret>(()),
            Access::Load(state),
            &script_id,
            &binding_id,
        );
        match outcome {
            Ok(_) => {}
            Err((message, _, _)) => {
                return Err(LoadError::Runtime {
                    file: script.file.clone(),
                    message,
                })
            }
        }
        freeze.call::<()>(()).map_err(internal)?;
        self.bindings.push(Binding {
            script_id,
            binding_id,
            entity: b.entity.clone(),
            defs,
        });
        Ok(())
    }

    /// Whether binding `binding` of script `script` defines a global
    /// function `name` (to report callbacks a reload made vanish).
    pub fn has_function(&self, script: &str, binding: &str, name: &str) -> bool {
        self.bindings.iter().any(|b| {
            &*b.script_id == script
                && &*b.binding_id == binding
                && matches!(b.defs.raw_get::<LuaValue>(name), Ok(LuaValue::Function(_)))
        })
    }

    /// Lines scripts printed since the last call (not canonical).
    pub fn take_log(&self) -> Vec<String> {
        std::mem::take(&mut *self.shared.log.borrow_mut())
    }

    /// Bytes the VM uses now.
    pub fn memory_bytes(&self) -> usize {
        self.lua.used_memory()
    }

    fn reset_budget(&self) {
        self.shared
            .remaining
            .set(self.limits.instructions_max as i64);
        self.shared.exhausted.set(false);
    }

    /// Calls `f` through the prelude's protected invoker with the native
    /// access of this callback. Returns the results, or (message, line,
    /// kind).
    fn call(
        &self,
        invoke: impl FnOnce() -> mlua::Result<Ret>,
        access: Access<'_, '_, '_>,
        script_id: &Id,
        binding_id: &Id,
    ) -> Result<(LuaValue, LuaValue), (String, Option<u32>, ScriptErrorKind)> {
        self.shared.fail_kind.set(None);
        let mut call = Call {
            access,
            script_id,
            binding_id,
            seq: self.seq,
            shared: &self.shared,
        };
        let result = self.slot.enter(&mut call, invoke);
        let failure = match result {
            Ok(r) => return Ok(r),
            Err(mlua::Error::MemoryError(_)) => (
                "not enough memory".to_owned(),
                None,
                ScriptErrorKind::Memory,
            ),
            Err(e) => self.classify(e.to_string()),
        };
        let _ = self.lua.gc_collect();
        Err(failure)
    }

    fn classify(&self, msg: String) -> (String, Option<u32>, ScriptErrorKind) {
        if self.shared.exhausted.get() {
            let msg = format!(
                "{BUDGET_MSG} ({} instructions per action; game.json limits.instructionsMax or run --instructions-max sets it)",
                self.limits.instructions_max
            );
            return (msg, None, ScriptErrorKind::Budget);
        }
        if msg == "not enough memory" || msg.contains("not enough memory") {
            let msg = format!(
                "memory limit exceeded ({} bytes per room; game.json limits.memoryBytesMax or run --memory-max sets it)",
                self.limits.memory_bytes_max
            );
            return (msg, None, ScriptErrorKind::Memory);
        }
        let kind = self
            .shared
            .fail_kind
            .get()
            .unwrap_or(ScriptErrorKind::Runtime);
        let line = line_of(&msg);
        (clean(&msg), line, kind)
    }

    fn handlers_for(&mut self, event_type: &'static str) -> Rc<HandlerList> {
        if let Some(list) = self.handlers.get(event_type) {
            return list.clone();
        }
        let name: &'static str =
            Box::leak(digipology_kernel::handler_name(event_type).into_boxed_str());
        let mut names = vec![name];
        if event_type == "game.started" {
            names.insert(0, "on_start");
        }
        let mut list = Vec::new();
        for (i, b) in self.bindings.iter().enumerate() {
            for n in &names {
                if let Ok(LuaValue::Function(f)) = b.defs.raw_get::<LuaValue>(*n) {
                    list.push((i, f, *n));
                }
            }
        }
        let list = Rc::new(list);
        self.handlers.insert(event_type, list.clone());
        list
    }

    /// A Lua string for a short name or id, created once and reused (every
    /// fresh string costs a protected call once a memory limit is set).
    fn sid(&self, s: &str) -> mlua::Result<LuaValue> {
        self.shared.string(&self.lua, s).map(LuaValue::String)
    }

    /// (type, seq, actionId or nil, key, value, …) for `P.handle`.
    fn event_args(&self, event: &Event) -> mlua::Result<Vec<LuaValue>> {
        let mut args = Vec::with_capacity(12);
        args.push(self.sid(event.type_name())?);
        args.push(LuaValue::Integer(event.seq as i64));
        args.push(match &event.action_id {
            digipology_kernel::event::ActionId::Auto(_) => LuaValue::Nil,
            digipology_kernel::event::ActionId::Given(id) => {
                LuaValue::String(self.lua.create_string(&**id)?)
            }
        });
        let mut failed = None;
        event.kind.fields(&mut |k, v| {
            if failed.is_some() {
                return;
            }
            let value = match v {
                Field::Null => Ok(LuaValue::Nil),
                Field::Bool(b) => Ok(LuaValue::Boolean(b)),
                Field::Num(n) => Ok(number(n)),
                Field::Str(s) => self.sid(s),
                other => to_lua(&self.lua, &other.to_value()),
            };
            match (self.sid(k), value) {
                (Ok(k), Ok(v)) => {
                    args.push(k);
                    args.push(v);
                }
                (Err(e), _) | (_, Err(e)) => failed = Some(e),
            }
        });
        if let Some(e) = failed {
            return Err(e);
        }
        Ok(args)
    }

    fn guards_for(&mut self, name: &'static str) -> Rc<Vec<(usize, Function)>> {
        if let Some(list) = self.guards.get(name) {
            return list.clone();
        }
        let list: Vec<(usize, Function)> = self
            .bindings
            .iter()
            .enumerate()
            .filter_map(|(i, b)| match b.defs.raw_get::<LuaValue>(name) {
                Ok(LuaValue::Function(f)) => Some((i, f)),
                _ => None,
            })
            .collect();
        let list = Rc::new(list);
        self.guards.insert(name, list.clone());
        list
    }

    fn failure(
        &self,
        b: &Binding,
        function: &str,
        (message, line, kind): (String, Option<u32>, ScriptErrorKind),
    ) -> ScriptFailure {
        ScriptFailure {
            script_id: b.script_id.to_string(),
            binding_id: b.binding_id.to_string(),
            function: function.to_owned(),
            line,
            message,
            kind,
        }
    }
}

/// Calls `P.handle(f, type, seq, actionId, n, k1, v1, …)`; events with up
/// to four data fields go over as a fixed tuple (no argument list to
/// allocate).
fn invoke_handler(call: &Function, f: &Function, args: Vec<LuaValue>) -> mlua::Result<Ret> {
    let n = args.len().saturating_sub(3) as i64;
    if n <= 8 {
        let mut it = args.into_iter();
        let mut next = || it.next().unwrap_or(LuaValue::Nil);
        let (t, seq, aid) = (next(), next(), next());
        let fields = [
            next(),
            next(),
            next(),
            next(),
            next(),
            next(),
            next(),
            next(),
        ];
        let [k1, v1, k2, v2, k3, v3, k4, v4] = fields;
        return call.call::<Ret>((f, t, seq, aid, n, k1, v1, k2, v2, k3, v3, k4, v4));
    }
    let mut it = args.into_iter();
    let mut all = MultiValue::new();
    all.push_back(LuaValue::Function(f.clone()));
    for _ in 0..3 {
        all.push_back(it.next().unwrap_or(LuaValue::Nil));
    }
    all.push_back(LuaValue::Integer(n));
    all.extend(it);
    call.call::<Ret>(all)
}

fn guard_name(kind: GuardKind) -> &'static str {
    kind.function_name()
}

impl ScriptHost for LuaHost {
    fn begin_transaction(&mut self, seq: u64) {
        self.seq = seq;
        self.reset_budget();
        *self.shared.doom.borrow_mut() = None;
        self.shared.storage_values.borrow_mut().clear();
        self.shared.ids.set(0);
    }

    fn guard(&mut self, state: &State, request: &GuardRequest<'_>) -> Verdict {
        let name = guard_name(request.kind);
        let guards = self.guards_for(name);
        if guards.is_empty() {
            return Verdict::Allow;
        }
        let player_name = match state
            .players
            .get(request.player_id)
            .and_then(|p| p.name.as_deref())
        {
            Some(n) => match self.sid(n) {
                Ok(v) => v,
                Err(e) => {
                    let b = &self.bindings[guards[0].0];
                    return Verdict::Fail(self.failure(
                        b,
                        name,
                        (e.to_string(), None, ScriptErrorKind::Runtime),
                    ));
                }
            },
            None => LuaValue::Nil,
        };
        let key = {
            use slotmap::Key;
            request.entity_key.data().as_ffi() as i64
        };
        let transform = match request
            .transform
            .map(|t| to_lua(&self.lua, &t.to_value()))
            .transpose()
        {
            Ok(t) => t.unwrap_or(LuaValue::Nil),
            Err(e) => {
                let b = &self.bindings[guards[0].0];
                return Verdict::Fail(self.failure(
                    b,
                    name,
                    (e.to_string(), None, ScriptErrorKind::Runtime),
                ));
            }
        };
        for (i, f) in guards.iter() {
            let b = &self.bindings[*i];
            if b.entity.as_deref().is_some_and(|e| e != request.entity_id) {
                continue;
            }
            let call = &self.guard_call;
            let invoke = || {
                call.call::<Ret>((
                    f,
                    self.sid(request.player_id)?,
                    player_name.clone(),
                    self.sid(request.entity_id)?,
                    key,
                    transform.clone(),
                ))
            };
            match self.call(invoke, Access::Guard(state), &b.script_id, &b.binding_id) {
                // A mutation the guard caught with pcall still fails it.
                Ok(_)
                    if matches!(
                        self.shared.fail_kind.get(),
                        Some(ScriptErrorKind::GuardMutation)
                    ) =>
                {
                    return Verdict::Fail(self.failure(
                        b,
                        name,
                        (
                            "guards are read-only: this guard tried to change the game (and caught the error)".into(),
                            None,
                            ScriptErrorKind::GuardMutation,
                        ),
                    ));
                }
                Ok((answer, reason)) => {
                    if !matches!(answer, LuaValue::Boolean(true)) {
                        // A reason is shown to the player: at most
                        // REASON_BYTES_MAX bytes of it are kept.
                        let reason = match reason {
                            LuaValue::String(s) => Some(truncated(&s.as_bytes())),
                            _ => None,
                        };
                        return Verdict::Deny { reason };
                    }
                }
                Err(e) => return Verdict::Fail(self.failure(b, name, e)),
            }
        }
        Verdict::Allow
    }

    fn on_event(
        &mut self,
        ctx: &mut ScriptCtx<'_, '_>,
        event: &Event,
    ) -> Result<(), ScriptFailure> {
        self.on_event_handlers(ctx, event)?;
        self.stored_callback(ctx, event)
    }

    fn wants_events(&self) -> bool {
        self.has_handlers
    }

    fn wants_event(&mut self, event_type: &'static str) -> bool {
        // Prompt answers and timer fires may have a stored callback; a
        // cancel removes one.
        matches!(
            event_type,
            "prompt.responded" | "timer.fired" | "prompt.canceled" | "timer.canceled"
        ) || !self.handlers_for(event_type).is_empty()
    }
}

impl LuaHost {
    fn on_event_handlers(
        &mut self,
        ctx: &mut ScriptCtx<'_, '_>,
        event: &Event,
    ) -> Result<(), ScriptFailure> {
        let handlers = self.handlers_for(event.type_name());
        if handlers.is_empty() {
            return Ok(());
        }
        let mut named: Option<Vec<String>> = None;
        let mut wants = |bindings: &[Binding], i: usize| match &bindings[i].entity {
            None => true,
            Some(e) => named
                .get_or_insert_with(|| {
                    event
                        .kind
                        .entity_ids()
                        .iter()
                        .map(|i| i.to_string())
                        .collect()
                })
                .contains(e),
        };
        let Some(last) = (0..handlers.len())
            .rev()
            .find(|&j| wants(&self.bindings, handlers[j].0))
        else {
            return Ok(());
        };
        let mut args: Option<Vec<LuaValue>> = None;
        for (j, (i, f, name)) in handlers.iter().enumerate().take(last + 1) {
            if j != last && !wants(&self.bindings, *i) {
                continue;
            }
            let b = &self.bindings[*i];
            let built = match args.take() {
                Some(a) => a,
                None => self.event_args(event).map_err(|e| {
                    self.failure(b, name, (e.to_string(), None, ScriptErrorKind::Runtime))
                })?,
            };
            // The argument list is moved into the last call, cloned before.
            let these = if j == last {
                built
            } else {
                args = Some(built.clone());
                built
            };
            let call = &self.handle_call;
            let invoke = || invoke_handler(call, f, these);
            self.run_handler(ctx, *i, name, invoke)?;
        }
        Ok(())
    }

    /// Runs one handler call for binding `index`; a failure, or a rejected
    /// subcommand the handler swallowed, becomes its script failure.
    fn run_handler(
        &self,
        ctx: &mut ScriptCtx<'_, '_>,
        index: usize,
        function: &str,
        invoke: impl FnOnce() -> mlua::Result<Ret>,
    ) -> Result<(), ScriptFailure> {
        let b = &self.bindings[index];
        if let Err(e) = self.call(invoke, Access::Handler(ctx), &b.script_id, &b.binding_id) {
            return Err(self.failure(b, function, e));
        }
        if ctx.is_doomed() {
            let (msg, kind) = self.shared.doom.borrow().clone().unwrap_or_else(|| {
                (
                    "a subcommand was rejected".into(),
                    ScriptErrorKind::Subcommand,
                )
            });
            return Err(self.failure(b, function, (msg, None, kind)));
        }
        Ok(())
    }

    /// Delivers a prompt's answer or a timer's fire to the callback stored
    /// by name with its binding; the stored record is then removed.
    fn stored_callback(
        &mut self,
        ctx: &mut ScriptCtx<'_, '_>,
        event: &Event,
    ) -> Result<(), ScriptFailure> {
        // A canceled prompt or timer will never call back: its record goes,
        // so canceled timers leave nothing behind in canonical storage.
        match &event.kind {
            EventKind::PromptCanceled { prompt_id, .. } => {
                forget_record(ctx, "prompts", prompt_id);
                return Ok(());
            }
            EventKind::TimerCanceled { timer_id } => {
                forget_record(ctx, "timers", timer_id);
                return Ok(());
            }
            // Only these two events can have a stored callback: every other
            // event leaves before the runtime's records are read.
            EventKind::PromptResponded { .. } | EventKind::TimerFired { .. } => {}
            _ => return Ok(()),
        }
        let runtime = match ctx.state().storage.get(RUNTIME_STORAGE) {
            Some(Value::Object(o)) => o.clone(),
            _ => BTreeMap::new(),
        };
        let section = |name: &str, id: &str| match runtime.get(name) {
            Some(Value::Object(m)) => m.get(id).cloned(),
            _ => None,
        };
        let field = |v: &Value, k: &str| match v {
            Value::Object(m) => m.get(k).cloned(),
            _ => None,
        };
        let text = |v: Option<Value>| match v {
            Some(Value::String(s)) => Some(s),
            _ => None,
        };
        let (section_name, id, callback, script, binding, value) = match &event.kind {
            EventKind::PromptResponded {
                prompt_id,
                response,
                ..
            } => {
                let Some(rec) = section("prompts", prompt_id) else {
                    return Ok(());
                };
                let (Some(cb), Some(sc), Some(bi)) = (
                    text(field(&rec, "callback")),
                    text(field(&rec, "script")),
                    text(field(&rec, "binding")),
                ) else {
                    return Ok(());
                };
                (
                    "prompts",
                    prompt_id.to_string(),
                    cb,
                    sc,
                    bi,
                    response.clone(),
                )
            }
            EventKind::TimerFired { timer_id, target } => {
                let data = section("timers", timer_id)
                    .and_then(|r| field(&r, "data"))
                    .unwrap_or(Value::Null);
                (
                    "timers",
                    timer_id.to_string(),
                    target.callback.clone(),
                    target.script_id.clone(),
                    target.binding_id.clone(),
                    data,
                )
            }
            _ => return Ok(()),
        };
        let missing = |what: String| ScriptFailure {
            script_id: script.clone(),
            binding_id: binding.clone(),
            function: callback.clone(),
            line: None,
            message: what,
            kind: ScriptErrorKind::Runtime,
        };
        let Some(index) = self
            .bindings
            .iter()
            .position(|b| *b.script_id == *script && *b.binding_id == *binding)
        else {
            return Err(missing(format!(
                "callback '{callback}': script \"{script}\" binding \"{binding}\" no longer exists"
            )));
        };
        let Ok(LuaValue::Function(f)) = self.bindings[index]
            .defs
            .raw_get::<LuaValue>(callback.as_str())
        else {
            return Err(missing(format!(
                "callback '{callback}' no longer exists in script \"{script}\" (it was stored with this {})",
                if section_name == "prompts" { "prompt" } else { "timer" }
            )));
        };
        forget_record(ctx, section_name, &id);
        let mut args = vec![to_lua(&self.lua, &value).map_err(|e| missing(e.to_string()))?];
        args.extend(self.event_args(event).map_err(|e| missing(e.to_string()))?);
        let n = args.len().saturating_sub(4) as i64;
        args.insert(4, LuaValue::Integer(n));
        let call = &self.callback_call;
        let invoke = || {
            let all: MultiValue = std::iter::once(LuaValue::Function(f.clone()))
                .chain(args)
                .collect();
            call.call::<Ret>(all)
        };
        self.run_handler(ctx, index, &callback, invoke)
    }
}

fn make_core(lua: &Lua, shared: &Rc<Shared>, modules: Modules) -> mlua::Result<Table> {
    let core = lua.create_table()?;
    let s = shared.clone();
    core.set(
        "exhausted",
        lua.create_function(move |_, ()| Ok(s.exhausted.get()))?,
    )?;
    let s = shared.clone();
    core.set(
        "charge",
        lua.create_function(move |_, n: i64| {
            if s.charge(n.max(0)) {
                Ok(())
            } else {
                s.fail(ScriptErrorKind::Budget);
                Err(mlua::Error::runtime(BUDGET_MSG))
            }
        })?,
    )?;
    let s = shared.clone();
    core.set(
        "fail",
        lua.create_function(move |_, kind: String| {
            let k = match kind.as_str() {
                "sandbox" => ScriptErrorKind::Sandbox,
                "budget" => ScriptErrorKind::Budget,
                "guard_mutation" => ScriptErrorKind::GuardMutation,
                "subcommand" => ScriptErrorKind::Subcommand,
                "memory" => ScriptErrorKind::Memory,
                _ => ScriptErrorKind::Runtime,
            };
            s.fail(k);
            Ok(())
        })?,
    )?;
    let s = shared.clone();
    core.set(
        "log",
        lua.create_function(move |_, (script, msg): (String, String)| {
            let mut log = s.log.borrow_mut();
            if log.len() < 10_000 {
                let msg: String = msg.chars().take(2000).collect();
                log.push(format!("[{script}] {msg}"));
            }
            Ok(())
        })?,
    )?;
    core.set("null", LuaValue::NULL)?;
    core.set(
        "module_source",
        lua.create_function(move |_, name: String| {
            Ok(modules.get(&name).map(|(f, s)| vec![f.clone(), s.clone()]))
        })?,
    )?;
    Ok(core)
}

fn syntax_error(file: &str, e: &mlua::Error) -> LoadError {
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
fn truncated(bytes: &[u8]) -> String {
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

/// Removes the stored record `storage["@runtime"][section][id]`, if any
/// (and the section, and the runtime root, when they become empty).
fn forget_record(ctx: &mut ScriptCtx<'_, '_>, section: &str, id: &str) {
    let Some(Value::Object(runtime)) = ctx.state().storage.get(RUNTIME_STORAGE) else {
        return;
    };
    let present = matches!(runtime.get(section), Some(Value::Object(m)) if m.contains_key(id));
    if !present {
        return;
    }
    let mut root = runtime.clone();
    if let Some(Value::Object(m)) = root.get_mut(section) {
        m.remove(id);
        if m.is_empty() {
            root.remove(section);
        }
    }
    let value = (!root.is_empty()).then_some(Value::Object(root));
    ctx.set_storage(RUNTIME_STORAGE, value);
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

/// A message without mlua's `runtime error: ` prefix and stack traceback,
/// with no memory address (an error object that is a table, function or
/// userdata without `__tostring` is described by its type), cut at
/// [`MESSAGE_CHARS_MAX`] characters.
fn clean(msg: &str) -> String {
    let msg = msg.strip_prefix("runtime error: ").unwrap_or(msg);
    let msg = msg.split("\nstack traceback:").next().unwrap_or(msg);
    for kind in ["table", "function", "userdata", "thread"] {
        if let Some(rest) = msg.strip_prefix(kind).and_then(|r| r.strip_prefix(": 0x")) {
            if rest.chars().all(|c| c.is_ascii_hexdigit()) {
                return format!("(error object is a {kind} value)");
            }
        }
    }
    if msg.chars().count() > MESSAGE_CHARS_MAX {
        let cut: String = msg.chars().take(MESSAGE_CHARS_MAX).collect();
        return format!("{cut}...");
    }
    msg.to_owned()
}

/// Compiles `source` without running it (for `digipology check`).
///
/// # Errors
/// The syntax error, with file and line.
pub fn check_syntax(file: &str, source: &str) -> Result<(), LoadError> {
    let lua = Lua::new_with(StdLib::NONE, LuaOptions::default())
        .map_err(|e| LoadError::Internal(e.to_string()))?;
    lua.load(source)
        .set_name(format!("={file}"))
        .set_mode(ChunkMode::Text)
        .into_function()
        .map(|_| ())
        .map_err(|e| syntax_error(file, &e))
}
