//! What a room has published, per viewer: each durable sequence's events
//! as that viewer sees them (docs/observations.md), kept for the match's
//! life so a stream resumes from any sequence, and a signal that wakes
//! the streams and long polls waiting on the room.

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::sync::watch;

/// The key of the spectators' feed (seat ids are the other keys).
pub const SPECTATOR: &str = "";

/// One room's published events.
pub struct Feed {
    inner: Mutex<Inner>,
    /// The last published sequence plus one (0: nothing yet), and whether
    /// the match is over — what waiters watch.
    tick: watch::Sender<Tick>,
}

/// What the waiters of a room watch.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Tick {
    /// The number of sequences published (the last one plus one).
    pub next: u64,
    /// The match has a result.
    pub over: bool,
    /// The room stopped (its log failed, or it could not be recovered).
    pub stopped: bool,
    /// How many reload notices the room has had (`serve --watch`).
    pub reloads: u32,
}

#[derive(Default)]
struct Inner {
    /// Per viewer: (sequence, that sequence's events as JSON lines).
    by_viewer: HashMap<String, Vec<(u64, String)>>,
    /// The last reload notice, as JSON `{ok, message}`.
    notice: String,
}

impl Feed {
    /// An empty feed.
    pub fn new() -> Feed {
        Feed {
            inner: Mutex::new(Inner::default()),
            tick: watch::channel(Tick::default()).0,
        }
    }

    /// Publishes what became durable: per viewer, the lines of each
    /// sequence it sees something of, then the new tick.
    pub fn publish(&self, items: Vec<(String, u64, String)>, tick: Tick) {
        if let Ok(mut inner) = self.inner.lock() {
            for (viewer, seq, lines) in items {
                inner
                    .by_viewer
                    .entry(viewer)
                    .or_default()
                    .push((seq, lines));
            }
        }
        // The reload count is the feed's own (a notice may come from
        // another thread meanwhile).
        self.tick.send_modify(|t| {
            *t = Tick {
                reloads: t.reloads,
                ..tick
            };
        });
    }

    /// Tells every stream of the room that its game was reloaded (or
    /// that a reload failed): `notice` is JSON `{ok, message}`.
    pub fn notice(&self, notice: String) {
        if let Ok(mut inner) = self.inner.lock() {
            inner.notice = notice;
        }
        self.tick
            .send_modify(|t| t.reloads = t.reloads.wrapping_add(1));
    }

    /// The last reload notice (empty when none).
    pub fn last_notice(&self) -> String {
        self.inner
            .lock()
            .map(|i| i.notice.clone())
            .unwrap_or_default()
    }

    /// Marks the room stopped (waiters give up).
    pub fn stop(&self) {
        self.tick.send_modify(|t| t.stopped = true);
    }

    /// The viewer's published sequences after `after` (all when `None`),
    /// at most `max` of them.
    pub fn since(&self, viewer: &str, after: Option<u64>, max: usize) -> Vec<(u64, String)> {
        let Ok(inner) = self.inner.lock() else {
            return Vec::new();
        };
        let Some(list) = inner.by_viewer.get(viewer) else {
            return Vec::new();
        };
        let from = match after {
            None => 0,
            Some(a) => list.partition_point(|(s, _)| *s <= a),
        };
        list[from..].iter().take(max).cloned().collect()
    }

    /// The current tick.
    pub fn tick(&self) -> Tick {
        *self.tick.borrow()
    }

    /// A receiver that wakes on every new tick.
    pub fn watch(&self) -> watch::Receiver<Tick> {
        self.tick.subscribe()
    }
}

impl Default for Feed {
    fn default() -> Self {
        Feed::new()
    }
}
