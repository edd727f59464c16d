//! Finding and loading a game package (`GAME/game.json`).

use std::fs;
use std::path::{Path, PathBuf};

use digipology_kernel::{state_from_game, State};

use crate::error::CliError;

/// A loaded game package.
#[derive(Debug, Clone)]
pub struct Package {
    /// The manifest path, as given or found.
    pub manifest: PathBuf,
    /// The parsed manifest.
    pub json: serde_json::Value,
}

impl Package {
    /// Loads `path` (a game folder or its `game.json`).
    ///
    /// # Errors
    /// A missing file, unreadable file or invalid JSON, naming the file.
    pub fn load(path: &Path) -> Result<Package, CliError> {
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
        let json = serde_json::from_str(&text).map_err(|e| CliError::Json {
            path: manifest.clone(),
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        })?;
        Ok(Package { manifest, json })
    }

    /// The starting state for a room with `seed`.
    ///
    /// # Errors
    /// The first problem in the manifest, with its JSON path.
    pub fn initial_state(&self, seed: u64) -> Result<State, CliError> {
        state_from_game(&self.json, seed).map_err(|e| CliError::Game {
            path: self.manifest.clone(),
            error: e,
        })
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
}
