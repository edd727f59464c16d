//! The transaction: every mutation goes through it and leaves an undo record,
//! so rollback costs what the transaction touched, never the table size.
//!
//! A `Txn` is used up: `Txn::commit` keeps the changes and hands back the
//! buffered events; `Txn::rollback` (also what `Drop` does to an unfinished
//! transaction) restores every touched field in reverse order.

use std::collections::BTreeMap;

use crate::digest::Touch;
use crate::entity::{Reveal, Trip, Within};
use crate::event::{ActionId, Event, EventKind, ScriptFailure};
use crate::reject::Rejection;
use crate::rng::Rng;
use crate::state::{
    Entity, EntityKey, Id, Placement, Player, Prompt, Stack, State, Timer, Visibility,
};
use crate::transform::Transform;
use crate::undo::{set_member, Undo};
use crate::value::Value;

/// Bytes of an entity copied per element of work when a change snapshots
/// it ([`Txn::entity_mut`]).
const SNAPSHOT_BYTES_PER_WORK: u64 = 64;

/// Bounds the kernel enforces on event cascades.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Deepest allowed chain event → handler → subcommand → event → …
    pub cascade_depth_max: u32,
    /// Most subcommands one top-level action may issue.
    pub subcommands_max: u32,
    /// The room's byte budget: the most the state may hold by the measure
    /// of `bytes.rs` (docs/lua-api.md, The byte budget). An action that
    /// would take the state past it (and further than it was) is refused
    /// (`state_full`; a script's write, a `memory` script error).
    pub bytes_max: u64,
}

/// The byte budget a room has when its game sets none.
pub const BYTES_MAX_DEFAULT: u64 = 64 * 1024 * 1024;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            cascade_depth_max: 32,
            subcommands_max: 10_000,
            bytes_max: BYTES_MAX_DEFAULT,
        }
    }
}

/// Why a transaction did not commit.
#[derive(Debug)]
pub(crate) enum Failure {
    Rejected(Rejection),
    Script(ScriptFailure),
}

impl From<Rejection> for Failure {
    fn from(r: Rejection) -> Self {
        Failure::Rejected(r)
    }
}

/// Scratch vectors reused from one transaction to the next, so a simple
/// action allocates nothing for its undo log.
#[derive(Debug, Default)]
pub(crate) struct Buffers {
    undo: Vec<Undo>,
    depths: Vec<u32>,
}

impl Clone for Buffers {
    fn clone(&self) -> Self {
        Buffers::default()
    }
}

/// Why a transaction is doomed even if the script swallowed the error.
#[derive(Clone, Debug)]
struct Poison {
    pub failure: ScriptFailure,
}

/// An open transaction over the room state.
pub struct Txn<'s> {
    state: &'s mut State,
    undo: Vec<Undo>,
    rng_saved: bool,
    pub(crate) events: Vec<Event>,
    event_depths: Vec<u32>,
    depth: u32,
    subcommands: u32,
    spawns: u32,
    /// Trips into hidden places so far (numbers the next one).
    trips: u32,
    /// Whether events keep how their entities could be seen (from the
    /// first change in this action to what a viewer could see: see
    /// [`Txn::watch`]).
    watching: bool,
    poison: Option<Poison>,
    limits: Limits,
    seq: u64,
    action_id: ActionId,
    /// Scripts whose storage root is already saved for rollback.
    storage_saved: Vec<String>,
    /// The player whose action this transaction runs (`None` for system
    /// and script sources).
    actor: Option<Id>,
    finished: bool,
    /// What the state held when the transaction began (rollback restores
    /// it).
    held_begin: u64,
    /// Entities changed through [`Txn::entity_mut`] (or in ways measured
    /// after the fact) since the held bytes were last brought up to date,
    /// with what each counted before: [`Txn::sync_held`] measures them
    /// again.
    remeasure: Vec<(EntityKey, u64)>,
    /// Elements the transaction's kernel work walked or moved (shuffles,
    /// list inserts and removals, trips): what a script host charges its
    /// subcommands for, beyond their fixed price.
    work: u64,
}

impl<'s> Txn<'s> {
    pub(crate) fn begin(
        state: &'s mut State,
        seq: u64,
        action_id: ActionId,
        limits: Limits,
        buffers: Buffers,
    ) -> Txn<'s> {
        state.gone.clear();
        let held_begin = state.held;
        Txn {
            held_begin,
            remeasure: Vec::new(),
            work: 0,
            state,
            undo: buffers.undo,
            rng_saved: false,
            events: Vec::new(),
            event_depths: buffers.depths,
            depth: 0,
            subcommands: 0,
            spawns: 0,
            trips: 0,
            watching: false,
            poison: None,
            limits,
            seq,
            action_id,
            storage_saved: Vec::new(),
            actor: None,
            finished: false,
        }
    }

    /// Read access to the state as the transaction sees it.
    pub fn state(&self) -> &State {
        self.state
    }

    /// The sequence of the top-level action.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// The id of the top-level action.
    pub fn action_id(&self) -> &ActionId {
        &self.action_id
    }

    /// Buffers an event; it reaches the log only on commit.
    pub(crate) fn emit(&mut self, kind: EventKind) {
        let seen = self.watching.then(|| self.state.seen_in(&kind));
        self.events.push(Event {
            seq: self.seq,
            action_id: self.action_id.clone(),
            kind,
            seen,
        });
        self.event_depths.push(self.depth);
    }

    /// From now on, events keep how the entities they name could be seen
    /// as they happen (docs/observations.md, The events a viewer sees).
    /// Called before the first change in an action that can make an
    /// entity more visible than it was — a trip, a reveal, an item leaving
    /// a private or hidden container, a visibility change, a destroy —
    /// and catching up the events so far, which nothing has hidden or
    /// revealed since: until then, what a viewer saw is what it sees. An
    /// action that does none of these (every action of a table that hides
    /// nothing) pays nothing.
    fn watch(&mut self) {
        if self.watching {
            return;
        }
        self.watching = true;
        for i in 0..self.events.len() {
            let seen = self.state.seen_in(&self.events[i].kind);
            self.events[i].seen = Some(seen);
        }
    }

    /// Records whose action this is (a player source).
    pub(crate) fn set_actor(&mut self, actor: Option<Id>) {
        self.actor = actor;
    }

    /// The player whose action this transaction runs.
    pub(crate) fn actor(&self) -> Option<&Id> {
        self.actor.as_ref()
    }

    /// The buffered event `i`, about to be delivered: later subcommands
    /// issued for it sit one level deeper in the cascade.
    pub(crate) fn enter_event(&mut self, i: usize) -> Event {
        self.depth = self.event_depths[i] + 1;
        self.events[i].clone()
    }

    /// Counts one more subcommand; `Err` with the bounds when this one
    /// passes either of them.
    pub(crate) fn count_subcommand(&mut self) -> Result<(), Limits> {
        self.subcommands += 1;
        if self.subcommands > self.limits.subcommands_max
            || self.depth > self.limits.cascade_depth_max
        {
            return Err(self.limits);
        }
        Ok(())
    }

    /// Dooms the transaction with its first failure (later ones are
    /// ignored): whatever happens next, it rolls back.
    pub(crate) fn poison(&mut self, failure: ScriptFailure) {
        if self.poison.is_none() {
            self.poison = Some(Poison { failure });
        }
    }

    /// The failure that doomed the transaction, if one did.
    pub(crate) fn poisoned(&self) -> Option<&ScriptFailure> {
        self.poison.as_ref().map(|p| &p.failure)
    }

    /// The events buffered so far, taken (a dry run reports them).
    pub(crate) fn take_events(&mut self) -> Vec<Event> {
        std::mem::take(&mut self.events)
    }

    /// Keeps every change and returns the events in emission order, with the
    /// scratch buffers for the next transaction.
    /// Keeps the changes. With `touched`, what the transaction touched is
    /// added to it (for the digests).
    pub(crate) fn commit(mut self, touched: Option<&mut Vec<Touch>>) -> (Vec<Event>, Buffers) {
        self.finished = true;
        match touched {
            Some(t) => t.extend(self.undo.drain(..).map(|u| u.touch())),
            None => self.undo.clear(),
        }
        self.state.free_buried();
        (std::mem::take(&mut self.events), self.take_buffers())
    }

    /// Restores every touched field, newest change first.
    pub(crate) fn rollback(mut self) -> Buffers {
        self.undo_all();
        self.finished = true;
        self.take_buffers()
    }

    fn take_buffers(&mut self) -> Buffers {
        let mut undo = std::mem::take(&mut self.undo);
        let mut depths = std::mem::take(&mut self.event_depths);
        undo.clear();
        depths.clear();
        Buffers { undo, depths }
    }

    fn undo_all(&mut self) {
        // A destroyed entity comes back under its own handle (its slot was
        // kept), so every record names the right entity.
        while let Some(u) = self.undo.pop() {
            u.apply(self.state);
        }
        self.rng_saved = false;
        self.state.held = self.held_begin;
        self.remeasure.clear();
    }

    // ---- the byte budget (bytes.rs) ----

    /// Adds `grown` and takes `shrunk` from what the state holds.
    fn resize(&mut self, grown: u64, shrunk: u64) {
        self.state.held = self.state.held.saturating_add(grown).saturating_sub(shrunk);
    }

    /// Notes what entity `key` counts now, before it changes in a way
    /// measured later ([`Txn::sync_held`]).
    fn remeasure_later(&mut self, key: EntityKey) {
        if self.remeasure.iter().any(|(k, _)| *k == key) {
            return;
        }
        if let Some(e) = self.state.get(key) {
            let before = crate::bytes::entity_bytes(e);
            self.remeasure.push((key, before));
        }
    }

    /// Brings what the state holds up to date with the entities changed
    /// since the last time.
    pub(crate) fn sync_held(&mut self) {
        for (key, before) in std::mem::take(&mut self.remeasure) {
            let now = self.state.get(key).map_or(0, crate::bytes::entity_bytes);
            self.resize(now, before);
        }
    }

    /// What the state holds now (docs/lua-api.md, The byte budget).
    pub(crate) fn held(&mut self) -> u64 {
        self.sync_held();
        self.state.held
    }

    /// Bytes the state may still grow by before the byte budget refuses.
    pub(crate) fn bytes_left(&mut self) -> u64 {
        let held = self.held();
        self.limits.bytes_max.saturating_sub(held)
    }

    /// `state_full` when the state holds more than the byte budget allows
    /// and more than it did when the transaction began.
    pub(crate) fn check_held(&mut self) -> Result<(), Rejection> {
        let held = self.held();
        if held > self.limits.bytes_max && held > self.held_begin {
            return Err(Rejection::new(
                crate::reject::RejectCode::StateFull,
                format!(
                    "the room would hold {held} bytes, more than its byte budget of {} \
                     (game.json limits.bytesMax; docs/lua-api.md, The byte budget)",
                    self.limits.bytes_max
                ),
            ));
        }
        Ok(())
    }

    /// Whether a storage write that adds `grown` bytes and frees `shrunk`
    /// fits the byte budget; `Err` says why not.
    pub(crate) fn storage_fits(&mut self, grown: u64, shrunk: u64) -> Result<(), String> {
        let held = self.held();
        let after = held.saturating_add(grown).saturating_sub(shrunk);
        if grown > shrunk && after > self.limits.bytes_max {
            return Err(format!(
                "the room's byte budget is spent: this write would make the room hold {after} bytes, \
                 more than {} (game.json limits.bytesMax; docs/lua-api.md, The byte budget)",
                self.limits.bytes_max
            ));
        }
        Ok(())
    }

    /// Records a storage write made in place that added `grown` bytes and
    /// freed `shrunk`.
    pub(crate) fn storage_resized(&mut self, grown: u64, shrunk: u64) {
        self.resize(grown, shrunk);
    }

    /// Notes `n` elements of kernel work.
    pub(crate) fn add_work(&mut self, n: usize) {
        self.work = self
            .work
            .saturating_add(u64::try_from(n).unwrap_or(u64::MAX));
    }

    /// Elements of kernel work done so far.
    pub(crate) fn work(&self) -> u64 {
        self.work
    }

    // ---- mutations (each records its undo first) ----

    /// Mutable access to a whole entity, snapshotting it first. Use the
    /// narrow setters below on hot paths.
    pub(crate) fn entity_mut(&mut self, key: EntityKey) -> Option<&mut Entity> {
        let entity = self.state.get(key)?;
        // The snapshot copies the whole entity, its props and text too: it
        // is work by its bytes (charged to a script that asked for it).
        let bytes = crate::bytes::entity_bytes(entity) / SNAPSHOT_BYTES_PER_WORK;
        let snapshot = Box::new(entity.clone());
        self.add_work(usize::try_from(bytes).unwrap_or(usize::MAX));
        self.remeasure_later(key);
        self.undo.push(Undo::Entity(key, snapshot));
        self.state.entity_mut(key)
    }

    /// Shuffles a container's item list in place with the canonical RNG.
    /// The undo record is the RNG state the shuffle started from.
    pub(crate) fn shuffle_items(&mut self, key: EntityKey) {
        let Some(items) = self.items(key) else {
            return;
        };
        // The list is lent out of the state while the RNG (which lives in
        // the state too) shuffles it.
        let mut list = std::mem::take(items);
        self.add_work(list.len());
        let before = self.rng().clone();
        self.undo.push(Undo::Shuffled(key, before));
        self.rng().shuffle(&mut list);
        if let Some(items) = self.items(key) {
            *items = list;
        }
    }

    fn items(&mut self, key: EntityKey) -> Option<&mut Vec<Id>> {
        self.state
            .entity_mut(key)
            .and_then(|e| e.components.container.as_mut())
            .map(|c| &mut c.items)
    }

    /// The container component of entity `key`.
    fn container(&self, key: EntityKey) -> Option<&crate::entity::Container> {
        self.state
            .get(key)
            .and_then(|e| e.components.container.as_ref())
    }

    /// Whether a container is private or hidden, or lies in such a place.
    fn hides(&self, key: EntityKey) -> bool {
        self.container(key)
            .is_some_and(|c| c.visibility != Visibility::Public)
            || self
                .state
                .get(key)
                .is_some_and(|e| self.state.within(e) != Within::Table)
    }

    /// Takes the item at `index` out of a container's list.
    pub(crate) fn item_remove(&mut self, key: EntityKey, index: usize) -> Option<Id> {
        if self.hides(key) {
            self.watch();
        }
        let items = self.items(key)?;
        if index >= items.len() {
            return None;
        }
        let shifted = items.len() - index;
        let id = items.remove(index);
        self.add_work(shifted);
        self.resize(0, crate::bytes::id_bytes(&id));
        self.undo.push(Undo::ItemRemoved(key, index, id.clone()));
        self.remembered(key, &id);
        Some(id)
    }

    /// An item leaving a private container stays known to the owner seat
    /// (its player saw it) until its next trip into a hidden place.
    fn remembered(&mut self, container: EntityKey, item: &Id) {
        let owner = self
            .container(container)
            .and_then(|c| c.visibility.owner())
            .cloned();
        if let (Some(owner), Some(key)) = (owner, self.state.key(item)) {
            self.reveal(key, Reveal::Seats(vec![owner]));
        }
    }

    /// Takes the last item (a deck's top card) out of a container's list.
    pub(crate) fn item_pop(&mut self, key: EntityKey) -> Option<Id> {
        if self.hides(key) {
            self.watch();
        }
        let items = self.items(key)?;
        let id = items.pop()?;
        let index = items.len();
        self.resize(0, crate::bytes::id_bytes(&id));
        self.undo.push(Undo::ItemRemoved(key, index, id.clone()));
        self.remembered(key, &id);
        Some(id)
    }

    /// Puts `id` into a container's list at `index` (at most its length).
    /// Going into a private or hidden container is a trip: the item's
    /// alias changes for seats that cannot see inside.
    pub(crate) fn item_insert(&mut self, key: EntityKey, index: usize, id: Id) {
        if self.hides(key) {
            if let Some(item) = self.state.key(&id) {
                self.count_trip(item, key);
            }
        }
        if let Some(items) = self.items(key) {
            let index = index.min(items.len());
            let shifted = items.len() - index;
            let bytes = crate::bytes::id_bytes(&id);
            items.insert(index, id);
            self.add_work(shifted);
            self.resize(bytes, 0);
            self.undo.push(Undo::ItemInserted(key, index));
        }
    }

    /// A trip into a hidden place, made inside container `holder`:
    /// numbered by when it happened (which every seat saw), the end of any
    /// reveal, and the end of where it lay — its position and rotation
    /// become the holder's (or the origin's), so nothing about it points
    /// back to where it was. Whatever it holds makes the trip with it.
    fn count_trip(&mut self, key: EntityKey, holder: EntityKey) {
        self.watch();
        let place = self.state.get(holder).and_then(|h| h.components.transform);
        let mut next = Some(key);
        let mut todo: Vec<EntityKey> = Vec::new();
        // Bounded: containers hold no cycle.
        while let Some(key) = next.take().or_else(|| todo.pop()) {
            self.trips = self.trips.saturating_add(1);
            self.add_work(1);
            let trip = Trip {
                at: self.seq.saturating_add(1),
                n: self.trips,
            };
            self.remeasure_later(key);
            let Some(e) = self.state.entity_mut(key) else {
                continue;
            };
            let was = std::mem::take(&mut e.secrecy);
            e.secrecy.trip = Some(trip);
            let now = e.components.transform;
            let moved = now.map(|t| t.placed_at(place));
            let inside: Option<Vec<Id>> = e
                .components
                .container
                .as_ref()
                .map(|c| c.items.iter().rev().cloned().collect());
            for id in inside.iter().flatten() {
                if let Some(k) = self.state.key(id) {
                    todo.push(k);
                }
            }
            self.undo.push(match was.revealed {
                Reveal::Nobody => Undo::Trip(key, was.trip),
                _ => Undo::Secrecy(key, Box::new(was)),
            });
            if moved != now {
                self.set_transform(key, moved);
            }
        }
    }

    /// After a shuffle, nobody knows where any card is: each item revealed
    /// to anyone makes a trip (its reveal ends), and so does each face-down
    /// item of a public container (anyone could follow it by its alias) —
    /// in their new order.
    pub(crate) fn trip_shuffled(&mut self, key: EntityKey) {
        let Some(c) = self.container(key) else {
            return;
        };
        let public = c.visibility == Visibility::Public;
        let items = c.items.clone();
        self.add_work(items.len());
        for id in items {
            let Some(item) = self.state.key(&id) else {
                continue;
            };
            let trips = self.state.get(item).is_some_and(|e| {
                e.secrecy.revealed != Reveal::Nobody
                    || (public && e.components.flippable == Some(true))
            });
            if trips {
                self.count_trip(item, key);
            }
        }
    }

    /// Sets a container's visibility; hiding its items from anyone who saw
    /// them is a trip for each, in order.
    pub(crate) fn set_visibility(&mut self, key: EntityKey, visibility: Visibility) {
        let Some(c) = self.container(key) else {
            return;
        };
        if c.visibility == visibility {
            return;
        }
        let hides = visibility != Visibility::Public;
        let items = if hides { c.items.clone() } else { Vec::new() };
        self.watch();
        if let Some(c) = self
            .entity_mut(key)
            .and_then(|e| e.components.container.as_mut())
        {
            c.visibility = visibility;
        }
        for id in items {
            if let Some(item) = self.state.key(&id) {
                self.count_trip(item, key);
            }
        }
    }

    /// Reveals an entity to more viewers (docs/observations.md).
    pub(crate) fn reveal(&mut self, key: EntityKey, to: Reveal) {
        self.watch();
        self.remeasure_later(key);
        if let Some(e) = self.state.entity_mut(key) {
            let was = e.secrecy.clone();
            e.secrecy.revealed = match (was.revealed.clone(), to) {
                (Reveal::All, _) | (_, Reveal::All) => Reveal::All,
                (Reveal::Nobody, r) | (r, Reveal::Nobody) => r,
                (Reveal::Seats(mut a), Reveal::Seats(b)) => {
                    a.extend(b);
                    a.sort_unstable();
                    a.dedup();
                    Reveal::Seats(a)
                }
            };
            if e.secrecy != was {
                self.undo.push(Undo::Secrecy(key, Box::new(was)));
            }
        }
    }

    /// Appends `id` to a container's list.
    pub(crate) fn item_push(&mut self, key: EntityKey, id: Id) {
        self.item_insert(key, usize::MAX, id);
    }

    pub(crate) fn set_counter(&mut self, key: EntityKey, value: f64) {
        if let Some(c) = self
            .state
            .entity_mut(key)
            .and_then(|e| e.components.counter.as_mut())
        {
            self.undo.push(Undo::Counter(key, c.value));
            c.value = value;
        }
    }

    pub(crate) fn set_die_value(&mut self, key: EntityKey, value: Value) {
        if let Some(d) = self
            .state
            .entity_mut(key)
            .and_then(|e| e.components.die.as_mut())
        {
            let grown = crate::bytes::value_bytes(&value);
            let prev = std::mem::replace(&mut d.value, value);
            let shrunk = crate::bytes::value_bytes(&prev);
            self.undo.push(Undo::DieValue(key, prev));
            self.resize(grown, shrunk);
        }
    }

    pub(crate) fn set_flipped(&mut self, key: EntityKey, flipped: bool) {
        if let Some(e) = self.state.entity_mut(key) {
            if let Some(prev) = e.components.flippable {
                self.undo.push(Undo::Flipped(key, prev));
                e.components.flippable = Some(flipped);
            }
        }
    }

    pub(crate) fn set_locked(&mut self, key: EntityKey, locked: bool) {
        if let Some(e) = self.state.entity_mut(key) {
            if let Some(prev) = e.components.lockable {
                self.undo.push(Undo::Locked(key, prev));
                e.components.lockable = Some(locked);
            }
        }
    }

    pub(crate) fn set_held_by(&mut self, key: EntityKey, holder: Option<Id>) {
        if let Some(e) = self.state.entity_mut(key) {
            let grown = holder.as_deref().map_or(0, crate::bytes::id_bytes);
            let prev = std::mem::replace(&mut e.held_by, holder);
            let shrunk = prev.as_deref().map_or(0, crate::bytes::id_bytes);
            self.undo.push(Undo::HeldBy(key, prev));
            self.resize(grown, shrunk);
        }
    }

    /// Commits a (canonical) transform, keeping the spatial index in step.
    pub(crate) fn set_transform(&mut self, key: EntityKey, t: Option<Transform>) {
        if let Some(e) = self.state.get(key) {
            self.undo.push(Undo::Transform(key, e.components.transform));
            self.state.replace_transform(key, t);
        }
    }

    pub(crate) fn set_placement(&mut self, key: EntityKey, p: Placement) {
        if let Some(e) = self.state.entity_mut(key) {
            let grown = crate::bytes::placement_bytes(&p);
            let prev = std::mem::replace(&mut e.placement, p);
            let shrunk = crate::bytes::placement_bytes(&prev);
            self.undo.push(Undo::Placement(key, prev));
            self.resize(grown, shrunk);
        }
    }

    /// Adds (`inside`) or removes an entity from a zone's sorted members.
    pub(crate) fn set_zone_member(&mut self, zone: EntityKey, id: &Id, inside: bool) {
        if let Some(z) = self
            .state
            .entity_mut(zone)
            .and_then(|e| e.components.zone.as_mut())
        {
            if set_member(&mut z.members, id, inside) {
                let bytes = crate::bytes::id_bytes(id);
                if inside {
                    self.resize(bytes, 0);
                } else {
                    self.resize(0, bytes);
                }
                self.undo.push(Undo::ZoneMember(zone, id.clone(), inside));
            }
        }
    }

    /// Adds a new entity; `None` when the id is taken.
    pub(crate) fn insert_entity(&mut self, entity: Entity) -> Option<EntityKey> {
        let bytes = crate::bytes::entity_bytes(&entity);
        let key = self.state.insert_live(entity)?;
        self.resize(bytes, 0);
        self.undo.push(Undo::Inserted(key));
        Some(key)
    }

    /// Keeps how an entity about to be destroyed can be seen, for the
    /// viewers of this action's events.
    pub(crate) fn note_gone(&mut self, key: EntityKey) {
        self.watch();
        if let Some(e) = self.state.get(key) {
            let exposure = self.state.exposure(e);
            let id = e.id.clone();
            self.state.gone.push((id, exposure));
        }
    }

    /// Removes an entity (its memberships must already be cleaned).
    pub(crate) fn remove_entity(&mut self, key: EntityKey) {
        // What it counts now, its last changes included.
        self.sync_held();
        let bytes = self.state.get(key).map_or(0, crate::bytes::entity_bytes);
        if self.state.bury(key) {
            self.resize(0, bytes);
            self.undo.push(Undo::Removed(key));
        }
    }

    /// Counts spawns in this transaction (1, 2, …) for spawned ids.
    pub(crate) fn next_spawn(&mut self) -> u32 {
        self.spawns += 1;
        self.spawns
    }

    /// Creates or replaces a prompt record.
    pub(crate) fn set_prompt(&mut self, id: Id, prompt: Prompt) {
        let grown = crate::bytes::prompt_bytes(&id, &prompt);
        let prev = self.state.prompts.insert(id.clone(), prompt);
        let shrunk = prev
            .as_ref()
            .map_or(0, |p| crate::bytes::prompt_bytes(&id, p));
        self.resize(grown, shrunk);
        self.undo.push(Undo::Prompt(id, prev));
    }

    /// Creates or replaces (`Some`) or deletes (`None`) a timer record.
    pub(crate) fn set_timer(&mut self, id: Id, timer: Option<Timer>) {
        let grown = timer
            .as_ref()
            .map_or(0, |t| crate::bytes::timer_bytes(&id, t));
        let prev = match timer {
            Some(t) => self.state.timers.insert(id.clone(), t),
            None => self.state.timers.remove(&id),
        };
        let shrunk = prev
            .as_ref()
            .map_or(0, |t| crate::bytes::timer_bytes(&id, t));
        self.resize(grown, shrunk);
        self.undo.push(Undo::Timer(id, prev));
    }

    /// Creates, replaces (`Some`) or deletes (`None`) a stack record.
    pub(crate) fn set_stack(&mut self, id: Id, stack: Option<Stack>) {
        let grown = stack
            .as_ref()
            .map_or(0, |s| crate::bytes::stack_bytes(&id, s));
        if let Some(s) = &stack {
            self.add_work(s.items.len());
        }
        let prev = match stack {
            Some(s) => self.state.stacks.insert(id.clone(), s),
            None => self.state.stacks.remove(&id),
        };
        let shrunk = prev
            .as_ref()
            .map_or(0, |s| crate::bytes::stack_bytes(&id, s));
        self.resize(grown, shrunk);
        self.undo.push(Undo::Stack(id, prev));
    }

    pub(crate) fn set_player(&mut self, id: Id, player: Option<Player>) {
        let grown = player
            .as_ref()
            .map_or(0, |p| crate::bytes::player_bytes(&id, p));
        let prev = match player {
            Some(p) => self.state.players.insert(id.clone(), p),
            None => self.state.players.remove(&id),
        };
        let shrunk = prev
            .as_ref()
            .map_or(0, |p| crate::bytes::player_bytes(&id, p));
        self.resize(grown, shrunk);
        self.undo.push(Undo::Player(id, prev));
    }

    pub(crate) fn set_seat(&mut self, id: Id, occupant: Option<Id>) {
        let grown = crate::bytes::seat_bytes(&id, occupant.as_ref());
        let prev = self.state.seats.insert(id.clone(), occupant);
        let shrunk = prev
            .as_ref()
            .map_or(0, |o| crate::bytes::seat_bytes(&id, o.as_ref()));
        self.resize(grown, shrunk);
        self.undo.push(Undo::Seat(id, prev));
    }

    pub(crate) fn set_settings(&mut self, settings: BTreeMap<String, Value>) {
        let grown = crate::bytes::map_bytes(&settings);
        let prev = std::mem::replace(&mut self.state.settings, settings);
        self.resize(grown, crate::bytes::map_bytes(&prev));
        self.undo.push(Undo::Settings(prev));
    }

    /// The RNG, saved once per transaction before its first use.
    pub fn rng(&mut self) -> &mut Rng {
        if !self.rng_saved {
            self.undo.push(Undo::Rng(self.state.rng.clone()));
            self.rng_saved = true;
        }
        &mut self.state.rng
    }

    /// A script's canonical storage root to change in place (an empty
    /// object when it has none). The first touch in a transaction keeps one
    /// copy of the root for rollback; later writes cost only what they
    /// change, however many there are.
    pub fn storage_root_mut(&mut self, script_id: &str) -> &mut Value {
        if !self.storage_saved.iter().any(|s| s == script_id) {
            let prev = self.state.storage().get(script_id).cloned();
            self.undo.push(Undo::Storage(script_id.to_owned(), prev));
            self.storage_saved.push(script_id.to_owned());
        }
        self.state.storage_stamp = crate::state::fresh_storage_stamp();
        if !self.state.storage.contains_key(script_id) {
            let empty = Value::Object(BTreeMap::new());
            self.resize(crate::bytes::storage_bytes(script_id, &empty), 0);
        }
        self.state
            .storage
            .entry(script_id.to_owned())
            .or_insert_with(|| Value::Object(BTreeMap::new()))
    }

    /// Sets (or with `None`, removes) a script's canonical storage value.
    pub fn set_storage(&mut self, script_id: &str, value: Option<Value>) {
        self.state.storage_stamp = crate::state::fresh_storage_stamp();
        let grown = value
            .as_ref()
            .map_or(0, |v| crate::bytes::storage_bytes(script_id, v));
        let prev = match value {
            Some(v) => self.state.storage.insert(script_id.to_owned(), v),
            None => self.state.storage.remove(script_id),
        };
        let shrunk = prev
            .as_ref()
            .map_or(0, |v| crate::bytes::storage_bytes(script_id, v));
        self.resize(grown, shrunk);
        self.undo.push(Undo::Storage(script_id.to_owned(), prev));
    }

    /// How many undo records the transaction holds (what rollback will cost).
    pub fn touched(&self) -> usize {
        self.undo.len()
    }
}

impl Drop for Txn<'_> {
    fn drop(&mut self) {
        if !self.finished {
            self.undo_all();
        }
    }
}
