//! One of the two places this crate uses `unsafe` (the other is `raw.rs`).
//!
//! Scripts reach the kernel through one native function created when the VM
//! starts. While a callback runs, that function needs the callback's
//! [`Call`] — which borrows the live transaction, so it cannot be `'static`.
//! mlua's `scope` solves this safely, but creates and tears down a native
//! function for every callback (about 1 µs, twice per scripted action). This
//! slot instead holds a pointer to the `Call` for exactly the duration of
//! [`Slot::enter`], and lends it out one borrow at a time.
#![allow(unsafe_code)]

use std::cell::Cell;
use std::ptr;

use crate::access::Call;

/// The running callback's [`Call`], its lifetimes erased.
pub(crate) type Erased = Call<'static, 'static, 'static>;

/// Where the running callback's [`Call`] can be found.
#[derive(Debug)]
pub struct Slot(Cell<*mut Erased>);

impl Slot {
    /// An empty slot.
    pub fn new() -> Slot {
        Slot(Cell::new(ptr::null_mut()))
    }

    /// Runs `f` with `call` reachable through [`Slot::with_current`]; the
    /// previous content is restored afterwards, even on unwinding.
    pub fn enter<R>(&self, call: &mut Call<'_, '_, '_>, f: impl FnOnce() -> R) -> R {
        struct Restore<'s>(&'s Slot, *mut Erased);
        impl Drop for Restore<'_> {
            fn drop(&mut self) {
                self.0 .0.set(self.1);
            }
        }
        let erased = (call as *mut Call<'_, '_, '_>).cast::<Erased>();
        let _restore = Restore(self, self.0.replace(erased));
        f()
    }

    /// Lends the current [`Call`] to `f`, or `None` outside a callback. The
    /// slot is empty while `f` runs, so a re-entrant use gets `None` instead
    /// of a second mutable borrow.
    pub fn with_current<R>(&self, f: impl FnOnce(&mut Erased) -> R) -> Option<R> {
        let p = self.0.replace(ptr::null_mut());
        if p.is_null() {
            return None;
        }
        struct Put<'s>(&'s Slot, *mut Erased);
        impl Drop for Put<'_> {
            fn drop(&mut self) {
                self.0 .0.set(self.1);
            }
        }
        let _put = Put(self, p);
        // SAFETY: `p` was set by `enter` from a `&mut Call` that stays
        // borrowed by `enter`'s caller until `enter` returns, and `enter`
        // clears the slot before that. `enter`'s caller does not touch the
        // `Call` while `f` (Lua code) runs. The slot is emptied for the
        // duration of this borrow, so no second `&mut` to the same `Call`
        // can be made. The erased lifetimes never escape as references:
        // `f` calls the natives' methods, which store none. The one raw
        // pointer that leaves (`raw.rs`: a storage string's bytes) is
        // copied by Lua before anything can change the state.
        let call = unsafe { &mut *p };
        Some(f(call))
    }
}
