//! `tally`: a two-seat game of one counter per seat, no ceiling and no
//! scripts — the server's own cost, and counts that add up exactly (the
//! server's fault test and load bench).

use std::path::{Path, PathBuf};

use serde_json::json;

/// Writes the game under `dir` and returns its folder.
pub fn tally_game(dir: &Path) -> PathBuf {
    let game = dir.join("tally");
    std::fs::create_dir_all(&game).expect("dir");
    let counter = |id: &str| json!({"id": id, "components": {"counter": {"value": 0}}});
    let manifest = json!({"id": "tally", "name": "Tally", "version": "1.0.0", "kernelVersion": 1,
                          "seats": ["north", "south"],
                          "entities": [counter("score_north"), counter("score_south")]});
    std::fs::write(game.join("game.json"), manifest.to_string()).expect("game.json");
    game
}
