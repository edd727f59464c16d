//! What a host is built from: the scripts and their bindings, the modules
//! `require` can load, the VM's limits — and why loading can fail.

use std::collections::BTreeMap;

/// Resource limits of a room's VM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Lua VM instructions one transaction (or one script's loading) may run.
    pub instructions_max: u64,
    /// Bytes the whole VM may allocate.
    pub memory_bytes_max: usize,
    /// The room's byte budget (docs/lua-api.md, The byte budget): what a
    /// game function's answer (a view, legal actions, a bot's move, a
    /// score) may hold, by the budget's measure; the kernel bounds what the
    /// state holds with the same figure.
    pub bytes_max: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            instructions_max: 10_000_000,
            memory_bytes_max: 64 * 1024 * 1024,
            bytes_max: digipology_kernel::txn::BYTES_MAX_DEFAULT,
        }
    }
}

/// A script from `game.json`, with its source text.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
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
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
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
