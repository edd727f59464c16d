//! VM set-up: the libraries, the instruction hook, the prelude and its
//! determinism self-test, the memory limit, and loading each binding's
//! script into its own environment.

use std::rc::Rc;

use digipology_kernel::{Id, ScriptErrorKind, State};
use mlua::chunk::ChunkMode;
use mlua::{Function, Lua, LuaOptions, StdLib, Table, Value as LuaValue};
use rustc_hash::FxHashMap;

use crate::access::{handle_of, Access};
use crate::errors::syntax_error;
use crate::host::{Binding, LuaHost, Ret};
use crate::native::natives;
use crate::shared::Shared;
use crate::slot::Slot;
use crate::spec::{BindingSpec, Limits, LoadError, Modules, ScriptSpec};

/// The prelude: the Lua side of the runtime, three files run as one chunk:
/// `src/lua/sandbox.lua`, the creator API in `prelude.lua` at the
/// repository's root (where creators read it), and `src/lua/host.lua` (see
/// the first).
pub const PRELUDE: &str = concat!(
    include_str!("lua/sandbox.lua"),
    include_str!("../../prelude.lua"),
    include_str!("lua/host.lua")
);

/// `pairs` order of 24 string keys that every correctly built VM shows (see
/// `.cargo/config.toml`); checked at start-up.
const PAIRS_SELFTEST: &str =
    "k14,k18,k24,k23,k13,k17,k10,k20,k3,k2,k1,k22,k21,k11,k4,k16,k9,k15,k19,k8,k6,k7,k12,k5";

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
        LuaHost::new_for_api(
            digipology_kernel::load::API_VERSION_LATEST,
            scripts,
            modules,
            state,
            limits,
        )
    }

    /// [`LuaHost::new`] for a game written for creator API version `api`
    /// (`game.json`'s `apiVersion`, 1 when absent): the prelude keeps each
    /// documented behaviour as that version had it (docs/lua-api.md, API
    /// versions). A version this engine does not know is the newest.
    ///
    /// # Errors
    /// As [`LuaHost::new`].
    pub fn new_for_api(
        api: u64,
        scripts: &[ScriptSpec],
        modules: Modules,
        state: &State,
        limits: Limits,
    ) -> Result<LuaHost, LoadError> {
        let api = i64::try_from(api.clamp(1, digipology_kernel::load::API_VERSION_LATEST))
            .expect("API versions are small");
        let internal = |e: mlua::Error| LoadError::Internal(e.to_string());
        let libs = StdLib::TABLE | StdLib::STRING | StdLib::MATH | StdLib::UTF8 | StdLib::COROUTINE;
        let lua = Lua::new_with(libs, LuaOptions::default()).map_err(internal)?;
        let shared = Rc::new(Shared::new(
            i64::try_from(limits.instructions_max).unwrap_or(i64::MAX),
        ));
        shared.lua_state.set(lua.exec_raw_lua(|raw| raw.state()));
        crate::errors::arm_budget(&lua, &shared).map_err(internal)?;
        let core = make_core(&lua, &shared, modules).map_err(internal)?;
        let slot = Rc::new(Slot::new());
        let natives = natives(&lua, &slot).map_err(internal)?;
        let prelude: Table = prelude_chunk(&lua)
            .and_then(|f| f.call((core, lua.globals(), natives, api)))
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
            handle_many_call: get("handle_many")?,
            callback_call: get("callback")?,
            query_call: get("query")?,
            act_call: get("act")?,
            match_stepper: get("match_stepper")?,
            forget_call: get("forget")?,
            storage_caches: prelude.get::<Table>("storage_caches").map_err(internal)?,
            loading: prelude.get::<Table>("loading").map_err(internal)?,
            stopped_last: std::cell::Cell::new(false),
            stepper: std::cell::RefCell::default(),
            step_memo: std::cell::RefCell::default(),
            next_read_only: std::cell::Cell::new(false),
            lua,
            shared,
            limits,
            bindings: Vec::new(),
            slot,
            seq: state.sequence,
            guards: FxHashMap::default(),
            handlers: FxHashMap::default(),
            has_handlers: false,
            globals: std::cell::RefCell::default(),
        };
        // What the prelude made is the runtime's own (never read-only);
        // what the game's scripts make from now on is theirs.
        host.shared.read_only(false);
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
            spec.set("entity_id", id.as_str()).map_err(internal)?;
            spec.set("entity_key", handle_of(k)).map_err(internal)?;
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
            || {
                chunk
                    .call::<Ret>(())
                    .map(|(a, b)| (LuaValue::Boolean(true), a, b))
            },
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
        lua.create_function(move |_, n: i64| crate::errors::spend(&s, n.max(0)))?,
    )?;
    core.set("charge_strings", crate::raw::charge_strings(lua, shared)?)?;
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
        lua.create_function(
            move |_, (script, msg): (mlua::LuaString, mlua::LuaString)| {
                // Printing is something a callback did (`Shared::natives`).
                s.note_native();
                let mut log = s.log.borrow_mut();
                if log.len() < 10_000 {
                    // Only what is kept is copied out of the VM (the line's
                    // bytes were charged when the prelude joined them).
                    let bytes = msg.as_bytes();
                    let head = &bytes[..bytes.len().min(8000)];
                    let msg: String = String::from_utf8_lossy(head).chars().take(2000).collect();
                    let script = String::from_utf8_lossy(&script.as_bytes()).into_owned();
                    log.push(format!("[{script}] {msg}"));
                }
                Ok(())
            },
        )?,
    )?;
    let s = shared.clone();
    core.set(
        "located",
        lua.create_function(move |lua, err: LuaValue| {
            s.located.set(true);
            s.fail_line.set(script_line(lua));
            Ok(err)
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

/// Frames the message handler looks through for a script's line.
const LOCATE_DEPTH_MAX: usize = 64;

/// The current line of the innermost frame running a script's code (not the
/// prelude, not a C function), seen from a message handler: the line a
/// traceback would have named first.
fn script_line(lua: &Lua) -> Option<u32> {
    (1..=LOCATE_DEPTH_MAX)
        .map_while(|level| {
            lua.inspect_stack(level, |d| {
                let src = d.source();
                let script = src.what != "C"
                    && src
                        .short_src
                        .as_deref()
                        .is_some_and(|s| s.ends_with(".lua") && !s.ends_with("prelude.lua"));
                (script, d.current_line())
            })
        })
        .find_map(|(script, line)| {
            if script {
                line.and_then(|l| u32::try_from(l).ok())
            } else {
                None
            }
        })
}

/// The prelude compiled once per process: parsing its Lua was most of
/// what starting a VM cost (`simulate` starts one per match). Later VMs
/// load the compiled chunk (same code, same line numbers); binary chunks
/// come only from here, never from a game.
static PRELUDE_CODE: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();

fn prelude_chunk(lua: &Lua) -> mlua::Result<Function> {
    if let Some(code) = PRELUDE_CODE.get() {
        return lua
            .load(code.as_slice())
            .set_name("=prelude.lua")
            .set_mode(ChunkMode::Binary)
            .into_function();
    }
    let f = lua
        .load(PRELUDE)
        .set_name("=prelude.lua")
        .set_mode(ChunkMode::Text)
        .into_function()?;
    let _ = PRELUDE_CODE.set(f.dump(false));
    Ok(f)
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
