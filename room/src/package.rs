//! Finding and loading a game package (`GAME/game.json` and its scripts).

use std::fs;
use std::path::{Path, PathBuf};

use digipology_kernel::{state_from_game, state_from_game_streamed, State};
use digipology_lua::{BindingSpec, Limits, Modules, ScriptSpec};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::error::CliError;

/// A loaded game package.
#[derive(Debug, Clone)]
pub struct Package {
    /// The folder holding `game.json`.
    pub dir: PathBuf,
    /// The manifest path, as given or found.
    pub manifest: PathBuf,
    /// The parsed manifest (without `entities` when `entities` holds them).
    pub json: Value,
    /// The manifest's `entities`, kept as text when the package was loaded
    /// lean ([`Package::load_lean`]); `None` when `json` holds them.
    pub entities: Option<Box<RawValue>>,
}

impl Package {
    /// Loads `path` (a game folder or its `game.json`).
    ///
    /// # Errors
    /// A missing file, unreadable file or invalid JSON, naming the file.
    pub fn load(path: &Path) -> Result<Package, CliError> {
        let (manifest, text) = Package::load_text(path)?;
        let json = serde_json::from_str(&text).map_err(|e| CliError::Json {
            path: manifest.clone(),
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        })?;
        Ok(Package::at(manifest, json, None))
    }

    /// A package of the manifest at `manifest` (its folder is the game's).
    /// A package from a manifest already parsed (`json`, entities
    /// included), said to sit at `manifest`: a game kept elsewhere than in
    /// its folder (a server's log keeps the versions it ran).
    pub fn from_parts(manifest: PathBuf, json: Value) -> Package {
        Package::at(manifest, json, None)
    }

    fn at(manifest: PathBuf, json: Value, entities: Option<Box<RawValue>>) -> Package {
        let dir = manifest
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
        Package {
            dir,
            manifest,
            json,
            entities,
        }
    }

    /// The manifest's path and text.
    fn load_text(path: &Path) -> Result<(PathBuf, String), CliError> {
        let is_manifest = path.is_file() || path.extension().is_some_and(|e| e == "json");
        let manifest = if !is_manifest {
            path.join("game.json")
        } else {
            path.to_path_buf()
        };
        let text = fs::read_to_string(&manifest).map_err(|e| CliError::Io {
            path: manifest.clone(),
            message: if e.kind() == std::io::ErrorKind::NotFound {
                "not found (GAME is a folder holding game.json, or the game.json file itself; check the path)".into()
            } else {
                e.to_string()
            },
        })?;
        Ok((manifest, text))
    }

    /// [`Package::load`] for running a game: the manifest's `entities` stay
    /// text and are read one entity at a time when the room is built, so a
    /// big table never exists as one JSON value tree. A manifest this
    /// cannot read is loaded the ordinary way (for the exact error).
    ///
    /// # Errors
    /// As [`Package::load`].
    pub fn load_lean(path: &Path) -> Result<Package, CliError> {
        let (manifest, text) = Package::load_text(path)?;
        let Ok(mut parts) =
            serde_json::from_str::<std::collections::BTreeMap<String, Box<RawValue>>>(&text)
        else {
            return Package::load(path);
        };
        let entities = parts.remove("entities");
        let mut json = serde_json::Map::new();
        for (key, raw) in parts {
            match serde_json::from_str::<Value>(raw.get()) {
                Ok(v) => {
                    json.insert(key, v);
                }
                Err(_) => return Package::load(path),
            }
        }
        Ok(Package::at(manifest, Value::Object(json), entities))
    }

    /// The starting state for a room with `seed`.
    ///
    /// # Errors
    /// The first problem in the manifest, with its JSON path.
    pub fn initial_state(&self, seed: u64) -> Result<State, CliError> {
        match &self.entities {
            Some(raw) => state_from_game_streamed(&self.json, raw.get(), seed),
            None => state_from_game(&self.json, seed),
        }
        .map_err(|e| CliError::Game {
            path: self.manifest.clone(),
            error: e,
        })
    }

    /// The match config in `game.json` (`match`), checked; `None` when
    /// the game runs no match (docs/match.md).
    ///
    /// # Errors
    /// The first problem, with its JSON path.
    pub fn match_config(&self) -> Result<Option<crate::matches::MatchConfig>, CliError> {
        let config = match self.json.get("match") {
            None | Some(Value::Null) => return Ok(None),
            Some(v) => match_config_from(v, "match", &self.manifest)?,
        };
        // Pieces belong to the seats game.json lists: without any, the
        // setting would silently do nothing.
        if config.ownership != crate::matches::Ownership::None && self.seats().is_empty() {
            return Err(self.field_error(
                "match.ownership",
                "\"seatTags\" gives pieces to the seats game.json lists, and it lists none",
            ));
        }
        Ok(Some(config))
    }

    /// Seat ids in manifest order.
    pub fn seats(&self) -> Vec<String> {
        self.json
            .get("seats")
            .and_then(|s| s.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    }

    fn field_error(&self, path: &str, message: impl Into<String>) -> CliError {
        CliError::Game {
            path: self.manifest.clone(),
            error: digipology_kernel::LoadError {
                path: path.to_owned(),
                message: message.into(),
            },
        }
    }

    /// The scripts listed in `game.json`, with their source text. Paths in
    /// messages and chunk names are relative to the game folder, so events
    /// do not depend on where the command was run from.
    ///
    /// # Errors
    /// A malformed `scripts` entry, or a script file that cannot be read.
    pub fn scripts(&self) -> Result<Vec<ScriptSpec>, CliError> {
        let Some(list) = self.json.get("scripts").and_then(Value::as_array) else {
            return Ok(Vec::new());
        };
        let mut out: Vec<ScriptSpec> = Vec::new();
        for (i, s) in list.iter().enumerate() {
            let path = format!("scripts[{i}]");
            let obj = s.as_object().ok_or_else(|| self.field_error(&path, "must be an object like {\"id\": \"main\", \"file\": \"scripts/main.lua\", \"bindings\": [{\"id\": \"global\"}]}"))?;
            if let Some(k) = obj
                .keys()
                .find(|k| !["id", "file", "bindings"].contains(&k.as_str()))
            {
                return Err(self.field_error(
                    &path,
                    format!("unknown key \"{k}\" (allowed: id, file, bindings)"),
                ));
            }
            let id = nonempty(obj.get("id")).ok_or_else(|| {
                self.field_error(&format!("{path}.id"), "must be a non-empty string")
            })?;
            if id.starts_with('@') {
                return Err(self.field_error(
                    &format!("{path}.id"),
                    "script ids may not start with @ (reserved for the runtime)",
                ));
            }
            if out.iter().any(|o| o.id == id) {
                return Err(self.field_error(
                    &format!("{path}.id"),
                    format!("script id \"{id}\" is used twice"),
                ));
            }
            let file = nonempty(obj.get("file")).ok_or_else(|| {
                self.field_error(
                    &format!("{path}.file"),
                    "must be the script's path, like \"scripts/main.lua\"",
                )
            })?;
            let full = self.script_path(&file, &format!("{path}.file"))?;
            let source = read_script(&full).map_err(|e| CliError::Io {
                path: full.clone(),
                message: format!("cannot read the script listed in {path}.file: {e}"),
            })?;
            let bindings = self.bindings(obj.get("bindings"), &path)?;
            out.push(ScriptSpec {
                id,
                file,
                source,
                bindings,
            });
        }
        Ok(out)
    }

    /// A script path from `game.json`: relative, inside the game folder
    /// (no `..`, no absolute path, no link leading out of it).
    fn script_path(&self, file: &str, field: &str) -> Result<PathBuf, CliError> {
        let rel = Path::new(file);
        let inside = rel.components().all(|c| {
            matches!(
                c,
                std::path::Component::Normal(_) | std::path::Component::CurDir
            )
        });
        if !inside {
            return Err(self.field_error(
                field,
                format!("\"{file}\" must be a path inside the game folder, like \"scripts/main.lua\" (no absolute path, no ..)"),
            ));
        }
        let full = self.dir.join(rel);
        if let (Ok(real), Ok(root)) = (full.canonicalize(), self.dir.canonicalize()) {
            if !real.starts_with(&root) {
                return Err(self.field_error(
                    field,
                    format!("\"{file}\" leads outside the game folder (through a link)"),
                ));
            }
        }
        Ok(full)
    }

    fn bindings(&self, v: Option<&Value>, path: &str) -> Result<Vec<BindingSpec>, CliError> {
        let Some(v) = v else {
            return Ok(vec![BindingSpec {
                id: "global".into(),
                entity: None,
            }]);
        };
        let list = v
            .as_array()
            .ok_or_else(|| self.field_error(&format!("{path}.bindings"), "must be an array"))?;
        let mut out: Vec<BindingSpec> = Vec::new();
        for (j, b) in list.iter().enumerate() {
            let bpath = format!("{path}.bindings[{j}]");
            let obj = b.as_object().ok_or_else(|| self.field_error(&bpath, "must be an object like {\"id\": \"global\"} or {\"id\": \"d1\", \"entity\": \"die_1\"}"))?;
            if let Some(k) = obj.keys().find(|k| !["id", "entity"].contains(&k.as_str())) {
                return Err(
                    self.field_error(&bpath, format!("unknown key \"{k}\" (allowed: id, entity)"))
                );
            }
            let id = nonempty(obj.get("id")).ok_or_else(|| {
                self.field_error(&format!("{bpath}.id"), "must be a non-empty string")
            })?;
            if out.iter().any(|o| o.id == id) {
                return Err(self.field_error(
                    &format!("{bpath}.id"),
                    format!("binding id \"{id}\" is used twice"),
                ));
            }
            let entity = match obj.get("entity") {
                None | Some(Value::Null) => None,
                Some(e) => Some(nonempty(Some(e)).ok_or_else(|| {
                    self.field_error(&format!("{bpath}.entity"), "must be an entity id")
                })?),
            };
            out.push(BindingSpec { id, entity });
        }
        Ok(out)
    }

    /// Every `.lua` file under `scripts/`, for `require("name")` (a path
    /// relative to `scripts/` without `.lua`, `/` written `.`).
    pub fn modules(&self) -> Modules {
        let mut out = Modules::new();
        let root = self.dir.join("scripts");
        // A scripts folder that is a link leading out of the game folder
        // offers no modules.
        if let (Ok(real), Ok(game)) = (root.canonicalize(), self.dir.canonicalize()) {
            if !real.starts_with(&game) {
                return out;
            }
        }
        let mut stack = vec![root.clone()];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let p = entry.path();
                // Symbolic links are not followed (a link loop would never end).
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                if kind.is_symlink() {
                    continue;
                }
                if kind.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|e| e == "lua") {
                    let Ok(rel) = p.strip_prefix(&root) else {
                        continue;
                    };
                    let name = rel
                        .with_extension("")
                        .to_string_lossy()
                        .replace(['/', '\\'], ".");
                    let file = format!("scripts/{}", rel.to_string_lossy().replace('\\', "/"));
                    if let Ok(src) = read_script(&p) {
                        out.insert(name, (file, src));
                    }
                }
            }
        }
        out
    }

    /// The creator API version the game was written for: `game.json`'s
    /// `apiVersion`, 1 (the first) when absent (docs/lua-api.md, API
    /// versions).
    ///
    /// # Errors
    /// A value that is not a version this engine knows.
    pub fn api_version(&self) -> Result<u64, CliError> {
        digipology_kernel::load::api_version(&self.json)
            .map_err(|e| self.field_error(&e.path, &e.message))
    }

    /// The room's limits: `game.json` `limits` (`instructionsMax`,
    /// `memoryBytesMax`, `bytesMax`) over the defaults, each within this
    /// host's ceilings ([`crate::ceilings`]; a default above a ceiling is
    /// lowered to it).
    ///
    /// # Errors
    /// A malformed `limits` object, an unknown limit, or a value below the
    /// least allowed or above the host's ceiling (naming the field).
    pub fn limits(&self) -> Result<Limits, CliError> {
        use crate::ceilings::{BYTES_MIN, INSTRUCTIONS_MIN, MEMORY_BYTES_MIN};
        let c = crate::ceilings::get();
        let d = Limits::default();
        let mut l = Limits {
            instructions_max: d.instructions_max.min(c.instructions_max),
            memory_bytes_max: d
                .memory_bytes_max
                .min(usize::try_from(c.memory_bytes_max).unwrap_or(usize::MAX)),
            bytes_max: d.bytes_max.min(c.bytes_max),
        };
        let Some(v) = self.json.get("limits") else {
            return Ok(l);
        };
        let obj = v
            .as_object()
            .ok_or_else(|| self.field_error("limits", "must be an object"))?;
        for (k, v) in obj {
            let field = format!("limits.{k}");
            let (min, max, flag, what) = match k.as_str() {
                "instructionsMax" => (
                    INSTRUCTIONS_MIN,
                    c.instructions_max,
                    "--instructions-ceiling",
                    "instructions",
                ),
                "memoryBytesMax" => (
                    MEMORY_BYTES_MIN,
                    c.memory_bytes_max,
                    "--memory-ceiling",
                    "bytes: the runtime itself needs about a megabyte",
                ),
                "bytesMax" => (BYTES_MIN, c.bytes_max, "--bytes-ceiling", "bytes"),
                _ => {
                    return Err(self.field_error(
                        &field,
                        "unknown limit (allowed: instructionsMax, memoryBytesMax, bytesMax)",
                    ))
                }
            };
            let n = v
                .as_u64()
                .filter(|n| *n > 0)
                .ok_or_else(|| self.field_error(&field, "must be a positive integer"))?;
            if n < min {
                return Err(self.field_error(
                    &field,
                    format!("{n} is below the least a game may have ({min} {what})"),
                ));
            }
            if n > max {
                return Err(self.field_error(
                    &field,
                    format!(
                        "{n} is above this host's ceiling of {max} (the operator of a server or a \
                         simulation raises it with {flag}; docs/lua-api.md, Limits and ceilings)"
                    ),
                ));
            }
            match k.as_str() {
                "instructionsMax" => l.instructions_max = n,
                "memoryBytesMax" => l.memory_bytes_max = usize::try_from(n).unwrap_or(usize::MAX),
                _ => l.bytes_max = n,
            }
        }
        Ok(l)
    }

    /// A room over `state` with `host`, held to this game's byte budget
    /// (`limits.bytesMax`). A `fresh` table (not a saved one) must start
    /// within the budget.
    ///
    /// # Errors
    /// A malformed `limits`, or a fresh table that holds more than the
    /// budget before anything happens.
    pub fn new_room(
        &self,
        state: State,
        host: Option<digipology_lua::LuaHost>,
        fresh: bool,
    ) -> Result<crate::room::Room, CliError> {
        let limits = self.limits()?;
        let held = if fresh { state.measure_held() } else { 0 };
        if held > limits.bytes_max {
            return Err(self.field_error(
                "limits.bytesMax",
                format!(
                    "the table holds {held} bytes by the byte budget's measure before anything \
                     happens, more than the budget of {} (raise limits.bytesMax, or hold less; \
                     docs/lua-api.md, The byte budget)",
                    limits.bytes_max
                ),
            ));
        }
        let mut room = crate::room::Room::new(state, host);
        room.set_bytes_max(limits.bytes_max);
        Ok(room)
    }
}

/// Builds a room for `package`: starting state with `seed`, and the Lua
/// runtime when the game has scripts (limits from game.json, then
/// `overrides` where given).
///
/// # Errors
/// A broken manifest or a script that does not load.
pub fn build_room(
    package: &Package,
    seed: u64,
    overrides: (Option<u64>, Option<usize>),
) -> Result<crate::room::Room, CliError> {
    build_room_from(package, &package.sources()?, seed, overrides)
}

/// A game's scripts and `require` modules as read at one moment: rooms
/// built from them ([`build_room_from`]) do not change when the files do
/// (a server keeps the last ones that loaded while an edit is broken).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Sources {
    /// The scripts `game.json` names, with their text.
    pub scripts: Vec<ScriptSpec>,
    /// Every module under `scripts/`.
    pub modules: Modules,
}

/// [`build_room`] with the scripts and modules of `sources` instead of
/// those on disk now.
///
/// # Errors
/// As [`build_room`].
pub fn build_room_from(
    package: &Package,
    sources: &Sources,
    seed: u64,
    overrides: (Option<u64>, Option<usize>),
) -> Result<crate::room::Room, CliError> {
    let state = package.initial_state(seed)?;
    let host = package.script_host_from(sources, &state, overrides)?;
    let mut room = package.new_room(state, host, true)?;
    if let Some(config) = package.match_config()? {
        apply_match(&mut room, config, &package.manifest)?;
    }
    Ok(room)
}

/// Reads a match config (`path` names where it sits, for errors).
///
/// # Errors
/// The first problem, with its JSON path in `file`.
pub fn match_config_from(
    v: &Value,
    path: &str,
    file: &Path,
) -> Result<crate::matches::MatchConfig, CliError> {
    let types = crate::matches::schema::player_action_types();
    crate::matches::MatchConfig::from_json(v, path, &types).map_err(|e| CliError::Game {
        path: file.to_path_buf(),
        error: digipology_kernel::LoadError {
            path: e.path,
            message: e.message,
        },
    })
}

/// Reads a match config file (`run --match FILE`): a JSON object in the
/// shape of `game.json`'s `match`.
///
/// # Errors
/// An unreadable file, invalid JSON, or a config problem with its path.
pub fn match_config_file(file: &Path) -> Result<crate::matches::MatchConfig, CliError> {
    let text = fs::read_to_string(file).map_err(|e| CliError::Io {
        path: file.to_path_buf(),
        message: e.to_string(),
    })?;
    let v: Value = serde_json::from_str(&text).map_err(|e| CliError::Json {
        path: file.to_path_buf(),
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    })?;
    match_config_from(&v, "match", file)
}

/// Runs `room` as a match under `config` (a room's override or the
/// game's own).
///
/// # Errors
/// A resumed state's match book does not fit.
pub fn apply_match(
    room: &mut crate::room::Room,
    config: crate::matches::MatchConfig,
    file: &Path,
) -> Result<(), CliError> {
    room.set_match(config).map_err(|message| CliError::Io {
        path: file.to_path_buf(),
        message,
    })
}

/// A save game read from a file (`run --save` wrote it).
pub struct Save {
    /// The canonical state document.
    pub state: Value,
    /// The room clock when it was saved.
    pub clock: i64,
    /// Pending timers and their due times.
    pub timers: std::collections::BTreeMap<String, i64>,
    /// The room's alias secret (absent from saves written before it
    /// existed, which had no hidden places to alias).
    pub alias_key: Option<[u8; 32]>,
    /// The match config the room ran under (docs/match.md), when it ran a
    /// match: a resumed room keeps it, whatever game.json says now.
    pub match_config: Option<Value>,
}

impl Save {
    /// Reads and checks a save file for `package`.
    ///
    /// # Errors
    /// The file cannot be read, is not a save, or is another game's.
    pub fn read(path: &Path, package: &Package) -> Result<Save, CliError> {
        let bad = |message: String| CliError::Io {
            path: path.to_path_buf(),
            message,
        };
        let text = fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
        let v: Value = serde_json::from_str(&text).map_err(|e| CliError::Json {
            path: path.to_path_buf(),
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        })?;
        Save::from_value(&v, package).map_err(bad)
    }

    /// Checks a parsed save game for `package`.
    ///
    /// # Errors
    /// It is not a save, or is another game's, with what is wrong.
    pub fn from_value(v: &Value, package: &Package) -> Result<Save, String> {
        if v.get("save").and_then(Value::as_u64) != Some(crate::room::SAVE_VERSION) {
            return Err("not a save game (write one with `digipology run … --save FILE`; a --state-out file alone lacks the room clock and timer due times)".into());
        }
        let game = package.json.get("id").and_then(Value::as_str).unwrap_or("");
        let saved = v.get("game").and_then(Value::as_str).unwrap_or("");
        if saved != game {
            return Err(format!("this save is of game \"{saved}\", not \"{game}\""));
        }
        let clock = v
            .get("clock")
            .and_then(Value::as_i64)
            .filter(|c| *c >= 0)
            .ok_or("\"clock\" must be a non-negative integer")?;
        let mut timers = std::collections::BTreeMap::new();
        let list = v
            .get("timers")
            .and_then(Value::as_object)
            .ok_or("\"timers\" must be an object of due times")?;
        for (id, due) in list {
            let due = due.as_i64().filter(|d| *d >= 0).ok_or_else(|| {
                format!("timers[\"{id}\"] must be a non-negative integer due time")
            })?;
            timers.insert(id.clone(), due);
        }
        let state = v.get("state").cloned().ok_or("\"state\" is missing")?;
        let alias_key = match v.get("aliasKey") {
            None => None,
            Some(k) => Some(
                k.as_str()
                    .and_then(hex32)
                    .ok_or("\"aliasKey\" must be 64 hex digits")?,
            ),
        };
        Ok(Save {
            state,
            clock,
            timers,
            alias_key,
            match_config: v.get("match").filter(|m| !m.is_null()).cloned(),
        })
    }
}

/// 64 hex digits as 32 bytes.
fn hex32(text: &str) -> Option<[u8; 32]> {
    let bytes = text.as_bytes();
    if bytes.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (b, pair) in out.iter_mut().zip(bytes.chunks_exact(2)) {
        let pair = std::str::from_utf8(pair).ok()?;
        *b = u8::from_str_radix(pair, 16).ok()?;
    }
    Some(out)
}

/// Builds a room for `package` from a save game: the saved state, clock and
/// pending timers, and the package's scripts (as they are now).
///
/// # Errors
/// The save does not fit the package, or a script does not load.
pub fn resume_room(
    package: &Package,
    save_path: &Path,
    overrides: (Option<u64>, Option<usize>),
) -> Result<crate::room::Room, CliError> {
    let save = Save::read(save_path, package)?;
    room_from_save(package, &save, save_path, overrides)
}

/// Builds a room for `package` from a checked save; `save_path` names it
/// in errors.
///
/// # Errors
/// The save's state does not fit the package, or a script does not load.
pub fn room_from_save(
    package: &Package,
    save: &Save,
    save_path: &Path,
    overrides: (Option<u64>, Option<usize>),
) -> Result<crate::room::Room, CliError> {
    let game = package.initial_state(0)?;
    let state =
        digipology_kernel::state_from_canonical(&game, &save.state).map_err(|e| CliError::Io {
            path: save_path.to_path_buf(),
            message: e.to_string(),
        })?;
    let mut state = state;
    if let Some(key) = save.alias_key {
        state.alias_key = key;
    }
    let host = package.script_host(&state, overrides)?;
    let mut room = package.new_room(state, host, false)?;
    room.resume(save.clock, &save.timers)
        .map_err(|message| CliError::Io {
            path: save_path.to_path_buf(),
            message,
        })?;
    let config = match &save.match_config {
        Some(m) => Some(match_config_from(m, "match", save_path)?),
        None => package.match_config()?,
    };
    match config {
        Some(config) => apply_match(&mut room, config, save_path)?,
        // A book with no config to run it: refused, not run unchecked.
        None if room.kernel().state().match_book.is_some() => {
            return Err(CliError::Io {
                path: save_path.to_path_buf(),
                message: "the saved room ran a match, but neither the save nor the game has its config (\"match\")".into(),
            })
        }
        None => {}
    }
    Ok(room)
}

impl Package {
    /// The Lua runtime for this package against `state`, or `None` for a
    /// game without scripts.
    ///
    /// # Errors
    /// A malformed scripts entry, an unreadable file, or a script that does
    /// not load (syntax error, load-time error, unknown bound entity).
    pub fn script_host(
        &self,
        state: &State,
        overrides: (Option<u64>, Option<usize>),
    ) -> Result<Option<digipology_lua::LuaHost>, CliError> {
        self.script_host_from(&self.sources()?, state, overrides)
    }

    /// The scripts and modules on disk now.
    ///
    /// # Errors
    /// A malformed scripts entry or an unreadable file.
    pub fn sources(&self) -> Result<Sources, CliError> {
        Ok(Sources {
            scripts: self.scripts()?,
            modules: self.modules(),
        })
    }

    /// [`Package::script_host`] with the scripts and modules of `sources`.
    ///
    /// # Errors
    /// A script that does not load.
    pub fn script_host_from(
        &self,
        sources: &Sources,
        state: &State,
        (instructions, memory): (Option<u64>, Option<usize>),
    ) -> Result<Option<digipology_lua::LuaHost>, CliError> {
        let scripts = &sources.scripts;
        if scripts.is_empty() {
            return Ok(None);
        }
        let mut limits = self.limits()?;
        if let Some(n) = instructions {
            limits.instructions_max = n;
        }
        if let Some(n) = memory {
            limits.memory_bytes_max = n;
        }
        digipology_lua::LuaHost::new_for_api(
            self.api_version()?,
            scripts,
            sources.modules.clone(),
            state,
            limits,
        )
        .map(Some)
        .map_err(|e| CliError::Script {
            dir: self.dir.clone(),
            error: e,
        })
    }
}

/// Bytes a script file may have.
pub const SCRIPT_BYTES_MAX: u64 = 4 * 1024 * 1024;

/// Reads a script: a regular file of at most [`SCRIPT_BYTES_MAX`] bytes of
/// UTF-8 (a device or a pipe is refused before it is opened for reading).
pub fn read_script(path: &Path) -> std::io::Result<String> {
    let meta = fs::metadata(path)?;
    if !meta.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    if meta.len() > SCRIPT_BYTES_MAX {
        return Err(std::io::Error::other(format!(
            "{} bytes, over the {SCRIPT_BYTES_MAX}-byte limit for a script",
            meta.len()
        )));
    }
    fs::read_to_string(path)
}

fn nonempty(v: Option<&Value>) -> Option<String> {
    v.and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// Tells a game's sources among the files that changed in its folder
/// (`digipology watch`, `serve --watch`): a script or a JSON file (its
/// game.json, a module), not a file of its scenario tests under `tests/`.
/// Paths are taken relative to the folder, as given or as resolved, so a
/// folder that itself sits under a `tests/` is watched all the same.
pub struct SourceFilter {
    dir: PathBuf,
    resolved: PathBuf,
}

impl SourceFilter {
    /// The filter of the game in `dir`.
    pub fn new(dir: &Path) -> SourceFilter {
        SourceFilter {
            dir: dir.to_path_buf(),
            resolved: fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf()),
        }
    }

    /// Whether a change to `path` is a change to the game.
    pub fn is_source(&self, path: &Path) -> bool {
        let Ok(inside) = path
            .strip_prefix(&self.dir)
            .or_else(|_| path.strip_prefix(&self.resolved))
        else {
            return false;
        };
        inside
            .extension()
            .is_some_and(|e| e == "lua" || e == "json")
            && !inside.components().any(|c| c.as_os_str() == "tests")
    }
}

#[cfg(test)]
mod source_filter {
    use super::SourceFilter;
    use std::path::Path;

    /// A game that itself sits under a `tests/` folder still reloads; its
    /// own scenario tests, other files and other folders do not count.
    #[test]
    fn a_games_sources_are_its_scripts_and_json_not_its_tests() {
        let f = SourceFilter::new(Path::new("/nowhere/tests/my-game"));
        assert!(f.is_source(Path::new("/nowhere/tests/my-game/game.json")));
        assert!(f.is_source(Path::new("/nowhere/tests/my-game/scripts/main.lua")));
        assert!(!f.is_source(Path::new("/nowhere/tests/my-game/tests/win.json")));
        assert!(!f.is_source(Path::new("/nowhere/tests/my-game/notes.md")));
        assert!(!f.is_source(Path::new("/elsewhere/game.json")));
    }
}

#[cfg(test)]
mod reseed {
    use super::Package;
    use std::path::Path;

    /// `simulate` copies one table built on seed 0 and reseeds it for each
    /// match: that must be the table game.json builds on the match's seed
    /// (the same state hash — random numbers included — and alias secret).
    #[test]
    fn a_reseeded_table_is_the_table_built_on_that_seed() {
        let game = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/high-card");
        let package = Package::load(&game).expect("the example loads");
        let table = package.initial_state(0).expect("seed 0");
        for seed in [1, 7, 123_456_789, u64::MAX] {
            let mut copy = table.clone();
            copy.reseed(seed);
            let built = package.initial_state(seed).expect("a seed");
            assert_eq!(copy.hash(), built.hash(), "seed {seed}");
            assert_eq!(copy.alias_key, built.alias_key, "seed {seed}");
            assert_ne!(
                copy.hash(),
                table.hash(),
                "seed {seed}: the seed is in the hash"
            );
        }
    }
}
