//! `serve --watch` (docs/server.md, Hot reload): when a served game's
//! scripts or game.json change, the game is loaded again and every room
//! of it running now takes the new code, as `digipology watch` does; a
//! broken edit is told to the rooms' pages and the old code keeps running.

use std::collections::BTreeSet;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::Duration;

use notify::{RecursiveMode, Watcher};
use serde_json::json;

use crate::hub::{Game, Hub};
use crate::live::Cmd;

/// Quiet time after a game's last file event before it is reloaded (an
/// editor's save is often several events).
const DEBOUNCE: Duration = Duration::from_millis(100);

/// Watches every served game's folder; a thread reloads the games whose
/// files changed. The watchers must be kept: dropping them stops it.
///
/// # Errors
/// A folder cannot be watched.
pub fn watch(hub: &Arc<Hub>) -> Result<Vec<notify::RecommendedWatcher>, String> {
    let (tx, rx) = mpsc::channel::<String>();
    let mut watchers = Vec::new();
    for game in hub.games() {
        let sources = digipology_room::package::SourceFilter::new(&game.package.dir);
        let tx = tx.clone();
        let id = game.id.clone();
        let watched = game.package.dir.clone();
        let mut watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
            let Ok(event) = res else { return };
            if !(event.kind.is_modify() || event.kind.is_create() || event.kind.is_remove()) {
                return;
            }
            if event.paths.iter().any(|p| sources.is_source(p)) {
                let _ = tx.send(id.clone());
            }
        })
        .map_err(|e| format!("cannot watch {}: {e}", game.package.dir.display()))?;
        watcher
            .watch(&watched, RecursiveMode::Recursive)
            .map_err(|e| format!("cannot watch {}: {e}", watched.display()))?;
        watchers.push(watcher);
    }
    let hub = hub.clone();
    std::thread::Builder::new()
        .name("watch".into())
        .spawn(move || loop {
            let Ok(first) = rx.recv() else { return };
            let mut changed = BTreeSet::from([first]);
            loop {
                match rx.recv_timeout(DEBOUNCE) {
                    Ok(id) => {
                        changed.insert(id);
                    }
                    Err(RecvTimeoutError::Timeout) => break,
                    Err(RecvTimeoutError::Disconnected) => return,
                }
            }
            for id in changed {
                reload(&hub, &id);
            }
        })
        .map_err(|e| format!("cannot start the watch thread: {e}"))?;
    Ok(watchers)
}

/// Loads the game again and hands it to its running rooms, or tells them
/// why it could not be loaded.
fn reload(hub: &Hub, id: &str) {
    let Ok(old) = hub.game(id) else { return };
    let loaded = Game::load(&old.package.dir).and_then(|g| {
        if g.id == id {
            Ok(g)
        } else {
            Err(format!(
                "game.json's id changed from {id:?} to {:?}: restart the server to serve it",
                g.id
            ))
        }
    });
    match loaded {
        Ok(game) => {
            let (game, rooms) = hub.replace_game(game);
            tracing::info!(game = %id, rooms = rooms.len(), "reloaded");
            for room in rooms {
                let _ = room.tx.blocking_send(Cmd::Reload(game.clone()));
            }
        }
        Err(e) => {
            tracing::warn!(game = %id, "reload failed, the previous code keeps running: {e}");
            let notice = json!({"ok": false, "message": format!(
                "reload failed, the previous code keeps running: {e}"
            )})
            .to_string();
            for room in hub.live_rooms(id) {
                room.feed.notice(notice.clone());
            }
        }
    }
}
