//! The last line of defence behind metering (docs/server.md, A game that
//! stalls): a thread that watches what each worker (a room thread, a
//! simulation job) is running and, when one input has run longer than the
//! operator's allowance, sets the stop switch of the room running it
//! (`digipology_lua::LuaHost::interrupt`). The room's Lua then stops within
//! a thousand instructions, as if its budget were spent; what the host
//! does next (roll the input back, end the match with a logged input) is
//! the host's.
//!
//! The decision is taken on the wall clock, which is why it is never
//! replayed: the host logs what it decided instead.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// What one worker is running: since when, and the stop switch of the room
/// it runs.
#[derive(Default)]
pub struct Slot {
    busy: Mutex<Option<(Instant, Arc<AtomicBool>)>>,
}

impl Slot {
    /// Marks the worker busy with a room whose stop switch is `switch`
    /// until the guard is dropped.
    pub fn enter(&self, switch: Arc<AtomicBool>) -> Busy<'_> {
        *lock(&self.busy) = Some((Instant::now(), switch));
        Busy(self)
    }

    /// How long the worker has been running its current input, if it is.
    pub fn busy_for(&self) -> Option<Duration> {
        lock(&self.busy).as_ref().map(|(since, _)| since.elapsed())
    }
}

/// A worker marked busy ([`Slot::enter`]); idle again when dropped.
pub struct Busy<'a>(&'a Slot);

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        *lock(&self.0.busy) = None;
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

struct Inner {
    slots: Mutex<Vec<Weak<Slot>>>,
    allowance: Duration,
}

/// Watches the slots it hands out; stops with the last handle.
#[derive(Clone)]
pub struct Watchdog {
    inner: Arc<Inner>,
}

impl Watchdog {
    /// Starts watching: an input that runs `allowance` or longer has its
    /// room stopped.
    ///
    /// # Errors
    /// The watching thread could not be started.
    pub fn start(allowance: Duration) -> Result<Watchdog, String> {
        let inner = Arc::new(Inner {
            slots: Mutex::new(Vec::new()),
            allowance,
        });
        let weak = Arc::downgrade(&inner);
        // Checked often enough to stop an input soon after its allowance.
        let period = (allowance / 4).clamp(Duration::from_millis(5), Duration::from_millis(250));
        std::thread::Builder::new()
            .name("watchdog".into())
            .spawn(move || {
                while let Some(inner) = weak.upgrade() {
                    inner.check();
                    drop(inner);
                    std::thread::sleep(period);
                }
            })
            .map_err(|e| format!("cannot start the watchdog: {e}"))?;
        Ok(Watchdog { inner })
    }

    /// A slot for one more worker.
    pub fn slot(&self) -> Arc<Slot> {
        let slot = Arc::new(Slot::default());
        lock(&self.inner.slots).push(Arc::downgrade(&slot));
        slot
    }

    /// The operator's allowance.
    pub fn allowance(&self) -> Duration {
        self.inner.allowance
    }

    /// Workers still running one input twice the allowance after it began
    /// (their room was told to stop and has not): what `/health` reports.
    pub fn stuck(&self) -> usize {
        let twice = self.inner.allowance.saturating_mul(2);
        lock(&self.inner.slots)
            .iter()
            .filter_map(Weak::upgrade)
            .filter(|s| s.busy_for().is_some_and(|d| d >= twice))
            .count()
    }
}

impl Inner {
    fn check(&self) {
        let mut slots = lock(&self.slots);
        slots.retain(|s| s.strong_count() > 0);
        for slot in slots.iter().filter_map(Weak::upgrade) {
            if let Some((since, switch)) = lock(&slot.busy).as_ref() {
                if since.elapsed() >= self.allowance {
                    switch.store(true, Ordering::Relaxed);
                }
            }
        }
    }
}
