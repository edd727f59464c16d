//! The games a server offers (docs/server.md, A folder of games): each
//! path `serve` is given is a game — a folder holding a `game.json`, or
//! that file — or a folder of games, each of its folders that holds a
//! `game.json` one game (as `digipology test` reads a folder of games).
//! A game named on its own must load, or the server does not start; a
//! game found in a folder of games that does not load, or whose id a game
//! served already has, is named on stderr with why and left out, and the
//! others are served.

use std::path::{Path, PathBuf};

use crate::hub::Game;

/// The games to serve, and those found and left out.
pub struct Catalog {
    /// The games to serve, in the order given (a folder's by name).
    pub games: Vec<Game>,
    /// Game folders found in a folder of games and not served, with why.
    pub left_out: Vec<(PathBuf, String)>,
}

/// How a game folder was given.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Given {
    /// Named on its own: it must load.
    Named,
    /// Found in a folder of games: left out when it does not load.
    Found,
}

/// Loads the games `paths` name (each a game or a folder of games).
///
/// # Errors
/// A game named on its own does not load (as `Game::load` says) or has
/// the id of a game before it; a folder holds no game; no game found in a
/// folder loads.
pub fn load(paths: &[PathBuf]) -> Result<Catalog, String> {
    let mut catalog = Catalog {
        games: Vec::new(),
        left_out: Vec::new(),
    };
    // The same folder given twice (named, and found in a folder) is one.
    let mut seen: Vec<PathBuf> = Vec::new();
    for (dir, given) in expand(paths)? {
        let same = std::fs::canonicalize(&dir).unwrap_or_else(|_| dir.clone());
        if seen.contains(&same) {
            continue;
        }
        seen.push(same);
        let loaded = Game::load(&dir).and_then(|g| match catalog.games.iter().find(|o| o.id == g.id) {
            None => Ok(g),
            Some(other) => Err(format!(
                "{}: its id {:?} (in its game.json) is the id of {}, served already: give one of them another id",
                dir.display(),
                g.id,
                other.package.dir.display()
            )),
        });
        match (loaded, given) {
            (Ok(game), _) => catalog.games.push(game),
            (Err(e), Given::Named) => return Err(e),
            (Err(e), Given::Found) => {
                tracing::warn!("{}: not served (the other games are): {e}", dir.display());
                catalog.left_out.push((dir, e));
            }
        }
    }
    if catalog.games.is_empty() && !catalog.left_out.is_empty() {
        return Err(format!(
            "no game to serve: none of the {} games found loads (each is named above, with why)",
            catalog.left_out.len()
        ));
    }
    Ok(catalog)
}

/// The game folders `paths` give, in order: a path that is a folder
/// without a `game.json` is a folder of games, whose folders holding one
/// are taken by name.
fn expand(paths: &[PathBuf]) -> Result<Vec<(PathBuf, Given)>, String> {
    let mut out = Vec::new();
    for path in paths {
        if !path.is_dir() || path.join("game.json").is_file() {
            out.push((path.clone(), Given::Named));
            continue;
        }
        let entries = std::fs::read_dir(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut dirs: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|d| d.is_dir())
            .collect();
        dirs.sort();
        let before = out.len();
        for dir in dirs {
            if dir.join("game.json").is_file() {
                out.push((dir, Given::Found));
            } else if !hidden(&dir) {
                tracing::info!("{}: no game.json in it: not a game", dir.display());
            }
        }
        if out.len() == before {
            return Err(format!(
                "{}: no game here: neither it nor any folder in it holds a game.json (give game folders, or a folder of game folders)",
                path.display()
            ));
        }
    }
    Ok(out)
}

/// A folder whose name starts with a dot (`.git`): never a game, never
/// mentioned.
fn hidden(dir: &Path) -> bool {
    dir.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with('.'))
}
