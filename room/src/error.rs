//! Errors the CLI reports to a person: each names the file and what to do.

use std::path::PathBuf;

use digipology_kernel::LoadError;

/// A problem that stops a command (bad arguments, a broken game package).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CliError {
    /// A file could not be read or written.
    #[error("{}: {message}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// A JSON file did not parse.
    #[error("{}:{line}:{column}: invalid JSON: {message}", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// The parser's message.
        message: String,
    },
    /// A script does not load.
    #[error("{}: {error}", dir.display())]
    Script {
        /// The game folder (script paths are relative to it).
        dir: PathBuf,
        /// What failed.
        error: digipology_lua::LoadError,
    },
    /// The game package is not valid.
    #[error("{}: {error}", path.display())]
    Game {
        /// The manifest.
        path: PathBuf,
        /// What is wrong, and where in the manifest.
        error: LoadError,
    },
}
