//! Canonical state: players, seats, settings, entities with components,
//! stacks, prompts, timers, storage and the RNG. The entity and its
//! components are typed in `entity.rs`, stacks/prompts/timers in
//! `records.rs`, canonical forms of the parts in `canonical.rs`; all are
//! re-exported here.
//!
//! Entities live in a [`SlotMap`] (generational keys: a stale handle can never
//! reach a different entity) with an id index beside it. Every canonical walk
//! goes in id order; the index is only ever used for lookups.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use rustc_hash::FxHashMap;
use slotmap::{new_key_type, SlotMap};

use crate::rng::Rng;
use crate::spatial::{Footprint, Spatial};
use crate::transform::{Transform, Vec3};
use crate::value::{utf16_cmp, write_number, write_string, Value};

/// How much canonical text is gathered before it goes to the sink.
const CHUNK_BYTES: usize = 64 * 1024;

pub use crate::canonical::{entity_value, ids};
use crate::canonical::{id_map, player_value, seat_value, stack_value, write_entity};
pub use crate::entity::*;
pub use crate::id::Id;
pub use crate::records::*;

new_key_type! {
    /// Generational handle of an entity. Outlives nothing: once the entity is
    /// gone, lookups with the key return `None`.
    pub struct EntityKey;
}

/// The kernel version this crate implements.
pub const KERNEL_VERSION: u32 = 1;

/// The newest version of the creator API (docs/lua-api.md, API versions):
/// what `game.json`'s `apiVersion` may name, from 1 (the first, and what a
/// game without the key was written for) to this.
pub const API_VERSION_LATEST: u64 = 3;

/// The whole canonical state of a room.
#[derive(Clone, Debug)]
pub struct State {
    /// Next sequence to assign.
    pub sequence: u64,
    /// Flat room settings.
    pub settings: BTreeMap<String, Value>,
    /// Joined players by id.
    pub players: BTreeMap<Id, Player>,
    /// Seats by id; `None` for an empty seat.
    pub seats: BTreeMap<Id, Option<Id>>,
    pub(crate) entities: SlotMap<EntityKey, Entity>,
    /// The live entities' handles in ascending id order, computed when
    /// first asked after the set of live entities changed (not canonical).
    pub(crate) order: OnceLock<Vec<EntityKey>>,
    /// Entities destroyed by the running transaction: out of the index and
    /// the spatial index and invisible to every accessor, but still in
    /// their slots until it commits — so a rollback brings each back under
    /// its own handle and every proxy to it keeps working.
    pub(crate) buried: Vec<EntityKey>,
    /// Lookup only (never iterated): id → handle.
    pub(crate) index: FxHashMap<Id, EntityKey>,
    /// Stacks by id.
    pub stacks: BTreeMap<Id, Stack>,
    /// Prompts by id.
    pub prompts: BTreeMap<Id, Prompt>,
    /// Timers by id.
    pub timers: BTreeMap<Id, Timer>,
    /// Per-script canonical storage, by script id (read with
    /// [`State::storage`]; changed only by transactions and restores, each
    /// of which stamps it anew).
    pub(crate) storage: BTreeMap<String, Value>,
    /// Names the contents of `storage` (not canonical): a fresh number from
    /// [`fresh_storage_stamp`] whenever they change, kept by a clone. Two
    /// states with the same stamp hold the same storage, so a script host
    /// may keep what it read until the stamp changes.
    pub(crate) storage_stamp: u64,
    /// The canonical RNG.
    pub rng: Rng,
    /// The match's bookkeeping (docs/match.md): phase, clocks, balances,
    /// participation and result, kept by the room between actions and
    /// written under `match` — as the canonical JSON text of an object,
    /// which the room writes itself (so a book costs no value tree per
    /// action); `None` for a room that runs no match (its document and hash
    /// have no `match` key).
    pub match_book: Option<String>,
    /// Derived placement indexes (not canonical).
    pub(crate) spatial: Spatial,
    /// Prefab definitions from `game.json` (package data, not canonical).
    pub prefabs: BTreeMap<String, serde_json::Value>,
    /// Seat ids in the manifest's order (package data, not canonical).
    pub seat_order: Vec<Id>,
    /// The creator API version the game was written for (`game.json`'s
    /// `apiVersion`; package data, not canonical): what it keeps of an
    /// earlier version's documented behaviour (docs/lua-api.md, API
    /// versions). [`API_VERSION_LATEST`] unless loaded.
    pub api_version: u64,
    /// The room's secret for the aliases seats see hidden entities under
    /// (docs/observations.md): derived from the seed, never sent to a
    /// seat; room data like the clock, kept by save games, not canonical.
    pub alias_key: [u8; 32],
    /// How the entities the last action destroyed could be seen just
    /// before (their events still name them). Not canonical.
    pub(crate) gone: Vec<(Id, crate::entity::Exposure)>,
    /// The most units (`id::id_units`) any entity id this room has
    /// held has: how far the scrub of a game's text looks ahead for an
    /// id (docs/observations.md, Text a game writes). Only grows. Not
    /// canonical.
    pub(crate) id_units: usize,
    /// What the state holds by the byte budget's measure (`bytes.rs`):
    /// derived, not canonical; counted when a kernel takes the state and
    /// kept up to date by every transaction.
    pub(crate) held: u64,
}

/// A storage stamp never handed out before in this process (the first is 1:
/// a host may start from 0, which names no storage).
pub(crate) fn fresh_storage_stamp() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// The alias secret of a room seeded with `seed`: as secret as the seed
/// (a server picks seeds at random; a local run's seed 0 hides nothing
/// from someone who knows it).
pub fn alias_key(seed: u64) -> [u8; 32] {
    blake3::derive_key("digipology 2026-12-01 alias key", &seed.to_le_bytes())
}

/// What the spatial index needs to know of an entity.
pub(crate) fn footprint(e: &Entity) -> Footprint<'_> {
    Footprint {
        id: &e.id,
        position: e.components.transform.map(|t| t.position),
        snap_radius: e.components.snap_point.as_ref().map(|s| s.radius),
        zone: e.components.zone.is_some(),
    }
}

impl State {
    /// An empty room seeded with `seed`.
    pub fn new(seed: u64) -> State {
        State {
            sequence: 0,
            settings: BTreeMap::new(),
            players: BTreeMap::new(),
            seats: BTreeMap::new(),
            entities: SlotMap::with_key(),
            order: OnceLock::new(),
            index: FxHashMap::default(),
            stacks: BTreeMap::new(),
            prompts: BTreeMap::new(),
            timers: BTreeMap::new(),
            storage: BTreeMap::new(),
            storage_stamp: fresh_storage_stamp(),
            rng: Rng::from_seed(seed),
            match_book: None,
            spatial: Spatial::default(),
            prefabs: BTreeMap::new(),
            seat_order: Vec::new(),
            api_version: API_VERSION_LATEST,
            buried: Vec::new(),
            alias_key: alias_key(seed),
            gone: Vec::new(),
            id_units: 0,
            held: 0,
        }
    }

    /// Per-script canonical storage, by script id.
    pub fn storage(&self) -> &BTreeMap<String, Value> {
        &self.storage
    }

    /// What names the storage's contents now: it changes whenever they do
    /// (and a clone keeps it), so a host that remembers what it read with
    /// one stamp may reuse it while the stamp is the same.
    pub fn storage_stamp(&self) -> u64 {
        self.storage_stamp
    }

    /// The same starting state under another seed: its random numbers
    /// and its alias secret become those of `seed`, as if it had been
    /// built with it (building a table draws no random number).
    pub fn reseed(&mut self, seed: u64) {
        self.rng = Rng::from_seed(seed);
        self.alias_key = alias_key(seed);
    }

    /// The match bookkeeping as a value (`None` without a match).
    pub fn match_value(&self) -> Option<Value> {
        let text = self.match_book.as_deref()?;
        serde_json::from_str::<serde_json::Value>(text)
            .ok()
            .and_then(|j| Value::from_json(&j).ok())
    }

    /// A seed for a stream of the room's own (the match's sensing RNG,
    /// docs/match.md): derived from the room's secret — so from the seed —
    /// and `label`, independent of the gameplay RNG.
    pub fn derived_seed(&self, label: &str) -> u64 {
        let mut h = blake3::Hasher::new_keyed(&self.alias_key);
        h.update(b"digipology stream ");
        h.update(label.as_bytes());
        let bytes = h.finalize();
        let mut first = [0u8; 8];
        first.copy_from_slice(&bytes.as_bytes()[..8]);
        u64::from_le_bytes(first)
    }

    /// Adds an entity to a live room (index and spatial index included).
    pub(crate) fn insert_live(&mut self, entity: Entity) -> Option<EntityKey> {
        if self.index.contains_key(&entity.id) {
            return None;
        }
        let grow = entity
            .components
            .snap_point
            .as_ref()
            .is_some_and(|s| !self.spatial.snap_radius_fits(s.radius));
        self.spatial.add(footprint(&entity));
        let id = entity.id.clone();
        self.id_units = self.id_units.max(crate::id::id_units(&id));
        let key = self.entities.insert(entity);
        self.index.insert(id, key);
        self.order = OnceLock::new();
        if grow {
            // A snap point wider than the grid's cells: rebuild with bigger cells.
            self.spatial = Spatial::build(self.live().map(footprint));
        }
        Some(key)
    }

    /// Removes an entity from a live room (index and spatial index
    /// included); its handle becomes invalid.
    pub(crate) fn remove_live(&mut self, key: EntityKey) -> Option<Entity> {
        let e = self.entities.remove(key)?;
        self.order = OnceLock::new();
        self.index.remove(&e.id);
        self.spatial.remove(footprint(&e));
        Some(e)
    }

    /// Destroys an entity inside a transaction: it leaves the index and the
    /// spatial index but keeps its slot until [`State::free_buried`].
    pub(crate) fn bury(&mut self, key: EntityKey) -> bool {
        if self.is_buried(key) {
            return false;
        }
        let Some(e) = self.entities.get(key) else {
            return false;
        };
        self.index.remove(&e.id);
        self.spatial.remove(footprint(e));
        self.buried.push(key);
        self.order = OnceLock::new();
        true
    }

    /// Undoes [`State::bury`]: the entity is back under the same handle.
    pub(crate) fn revive(&mut self, key: EntityKey) {
        let Some(at) = self.buried.iter().position(|k| *k == key) else {
            return;
        };
        self.buried.swap_remove(at);
        self.order = OnceLock::new();
        if let Some(e) = self.entities.get(key) {
            self.index.insert(e.id.clone(), key);
            self.spatial.add(footprint(e));
        }
    }

    /// Frees the slots of the entities the committed transaction destroyed.
    pub(crate) fn free_buried(&mut self) {
        for key in std::mem::take(&mut self.buried) {
            self.entities.remove(key);
        }
    }

    fn is_buried(&self, key: EntityKey) -> bool {
        !self.buried.is_empty() && self.buried.contains(&key)
    }

    /// Every live entity (slots of buried ones skipped), in slot order.
    fn live(&self) -> impl Iterator<Item = &Entity> + Clone {
        self.entities
            .iter()
            .filter(|(k, _)| !self.is_buried(*k))
            .map(|(_, e)| e)
    }

    /// Rebuilds the derived indexes and every zone's members from scratch
    /// (after a room is built).
    pub fn rebuild_indexes(&mut self) {
        self.spatial = Spatial::build(self.live().map(footprint));
        let zones: Vec<Id> = self.spatial.zones().to_vec();
        for zid in zones {
            let members = self.zone_members_fresh(&zid);
            if let Some(z) = self
                .key(&zid)
                .and_then(|k| self.entities.get_mut(k))
                .and_then(|e| e.components.zone.as_mut())
            {
                z.members = members;
            }
        }
    }

    /// Replaces an entity's transform and re-indexes it.
    pub(crate) fn replace_transform(&mut self, key: EntityKey, t: Option<Transform>) {
        let Some(e) = self.entities.get_mut(key) else {
            return;
        };
        let old = e.components.transform.map(|t| t.position);
        e.components.transform = t;
        let new = t.map(|t| t.position);
        if old != new {
            self.spatial.place(footprint(e), old, new);
        }
    }

    /// The spatial index (read-only).
    pub fn spatial(&self) -> &Spatial {
        &self.spatial
    }

    /// The position zones see for `e`: its transform position, when it is on
    /// the table (not inside a container) and is not itself a zone.
    pub fn zone_position(e: &Entity) -> Option<Vec3> {
        if matches!(e.placement, Placement::Container(_)) || e.components.zone.is_some() {
            return None;
        }
        e.components.transform.map(|t| t.position)
    }

    /// Whether zone entity `zone` (with its transform) contains point `p`.
    pub fn zone_contains(zone: &Entity, p: Vec3) -> bool {
        let (Some(z), Some(t)) = (&zone.components.zone, &zone.components.transform) else {
            return false;
        };
        if matches!(zone.placement, Placement::Container(_)) {
            return false;
        }
        let c = t.position;
        let h = z.half_extents;
        (p.x - c.x).abs() <= h.x && (p.y - c.y).abs() <= h.y && (p.z - c.z).abs() <= h.z
    }

    /// A zone's members computed from scratch, sorted.
    pub fn zone_members_fresh(&self, zone_id: &str) -> Vec<Id> {
        let Some(zone) = self.entity(zone_id) else {
            return Vec::new();
        };
        let mut members: Vec<Id> = self
            .live()
            .filter(|e| State::zone_position(e).is_some_and(|p| State::zone_contains(zone, p)))
            .map(|e| e.id.clone())
            .collect();
        members.sort_unstable();
        members
    }

    /// Checks every placement invariant and the derived indexes; used by the
    /// property tests. Returns the first violation found.
    ///
    /// # Errors
    /// A description of the broken invariant.
    pub fn check_invariants(&self) -> Result<(), String> {
        let mut seen: BTreeMap<Id, Placement> = BTreeMap::new();
        let mut claim = |id: &Id, p: Placement| -> Result<(), String> {
            match seen.insert(id.clone(), p.clone()) {
                Some(prev) => Err(format!("{id} is placed twice: {prev:?} and {p:?}")),
                None => Ok(()),
            }
        };
        // The kept id order is the order of the live entities now.
        let mut live: Vec<&Entity> = self.live().collect();
        live.sort_unstable_by(|a, b| a.id.cmp(&b.id));
        let kept: Vec<&Id> = self.entities_sorted().iter().map(|e| &e.id).collect();
        if kept != live.iter().map(|e| &e.id).collect::<Vec<_>>() {
            return Err("the kept entity order is not the live entities' id order".into());
        }
        for e in live {
            if let Some(c) = &e.components.container {
                for item in &c.items {
                    claim(item, Placement::Container(e.id.clone()))?;
                }
            }
            if let Some(s) = &e.components.snap_point {
                if !s.attached.windows(2).all(|w| w[0] < w[1]) {
                    return Err(format!(
                        "snap point {} attachments are not in id order",
                        e.id
                    ));
                }
                for item in &s.attached {
                    claim(item, Placement::Snap(e.id.clone()))?;
                }
            }
        }
        for (sid, s) in &self.stacks {
            if s.items.is_empty() {
                return Err(format!("stack {sid} is empty"));
            }
            for item in &s.items {
                claim(item, Placement::Stack(sid.clone()))?;
            }
        }
        for e in self.live() {
            let expected = seen.get(&e.id).cloned().unwrap_or(Placement::World);
            if e.placement != expected {
                return Err(format!(
                    "{} records placement {:?} but is listed in {:?}",
                    e.id, e.placement, expected
                ));
            }
        }
        for id in seen.keys() {
            if self.entity(id).is_none() {
                return Err(format!("{id} is listed somewhere but does not exist"));
            }
        }
        for zid in self.spatial.zones() {
            let stored = self
                .entity(zid)
                .and_then(|e| e.components.zone.as_ref())
                .map(|z| z.members.clone())
                .unwrap_or_default();
            if stored != self.zone_members_fresh(zid) {
                return Err(format!("zone {zid} members are stale"));
            }
        }
        // The live grid may keep larger cells than a fresh build would pick
        // (a wide snap point that came and went): compare at its size.
        let fresh = Spatial::build_with_cell(self.live().map(footprint), self.spatial.snap_cell());
        let widest = self
            .live()
            .filter_map(|e| e.components.snap_point.as_ref().map(|s| s.radius))
            .fold(0.0, f64::max);
        if widest > self.spatial.snap_cell() {
            return Err("a snap point is wider than the snap grid's cells".into());
        }
        if self.spatial.fingerprint() != fresh.fingerprint() {
            return Err("the spatial index does not match the entities".into());
        }
        Ok(())
    }

    /// The handle of the entity with this id.
    pub fn key(&self, id: &str) -> Option<EntityKey> {
        self.index.get(id).copied()
    }

    /// The entity behind a handle; `None` once it is gone.
    pub fn get(&self, key: EntityKey) -> Option<&Entity> {
        if self.is_buried(key) {
            return None;
        }
        self.entities.get(key)
    }

    /// The entity with this id.
    pub fn entity(&self, id: &str) -> Option<&Entity> {
        self.key(id).and_then(|k| self.entities.get(k))
    }

    /// Number of entities.
    pub fn entity_count(&self) -> usize {
        self.entities.len() - self.buried.len()
    }

    /// Every seat with its occupant, in seat order: the manifest's seats
    /// in the order `game.json` lists them, then seats created later by
    /// `system.seat_assign`, by id.
    pub fn seats_in_order(&self) -> Vec<(&Id, Option<&Id>)> {
        self.seats_ordered().collect()
    }

    /// [`State::seats_in_order`] without collecting them.
    pub fn seats_ordered(&self) -> impl Iterator<Item = (&Id, Option<&Id>)> {
        let listed = self
            .seat_order
            .iter()
            .filter_map(|s| self.seats.get_key_value(s));
        let others = self
            .seats
            .iter()
            .filter(|(s, _)| !self.seat_order.contains(s));
        listed.chain(others).map(|(s, p)| (s, p.as_ref()))
    }

    /// All entities in ascending id order (the order is sorted once per
    /// change of the set of live entities).
    pub fn entities_sorted(&self) -> Vec<&Entity> {
        let order = self.order.get_or_init(|| {
            let mut keys: Vec<(EntityKey, &Entity)> = self
                .entities
                .iter()
                .filter(|(k, _)| !self.is_buried(*k))
                .collect();
            keys.sort_unstable_by(|a, b| a.1.id.cmp(&b.1.id));
            keys.into_iter().map(|(k, _)| k).collect()
        });
        order.iter().filter_map(|k| self.entities.get(*k)).collect()
    }

    /// Adds an entity. Used while building a room.
    ///
    /// # Errors
    /// The id is already taken.
    pub fn insert_entity(&mut self, entity: Entity) -> Result<EntityKey, String> {
        if self.index.contains_key(&entity.id) {
            return Err(format!("entity id \"{}\" is used twice", entity.id));
        }
        let id = entity.id.clone();
        self.id_units = self.id_units.max(crate::id::id_units(&id));
        let key = self.entities.insert(entity);
        self.index.insert(id, key);
        self.order = OnceLock::new();
        Ok(key)
    }

    pub(crate) fn entity_mut(&mut self, key: EntityKey) -> Option<&mut Entity> {
        if self.is_buried(key) {
            return None;
        }
        self.entities.get_mut(key)
    }

    /// The canonical document. With `include_sequence` false this is the
    /// gameplay document the state hash covers.
    pub fn to_value(&self, include_sequence: bool) -> Value {
        let mut top = self.public_sections(include_sequence);
        top.insert(
            "entities".to_owned(),
            Value::Object(
                self.live()
                    .map(|e| (e.id.to_string(), entity_value(e)))
                    .collect(),
            ),
        );
        top.insert("stacks".to_owned(), id_map(&self.stacks, stack_value));
        top.insert(
            "prompts".to_owned(),
            id_map(&self.prompts, Prompt::to_value),
        );
        top.insert("timers".to_owned(), id_map(&self.timers, Timer::to_value));
        top.insert("storage".to_owned(), Value::Object(self.storage.clone()));
        top.insert("rng".to_owned(), self.rng.to_value());
        if let Some(m) = self.match_value() {
            top.insert("match".to_owned(), m);
        }
        Value::Object(top)
    }

    /// The sections of the document every viewer sees as they are:
    /// `kernelVersion`, `sequence` (when included), `settings`, `players`
    /// and `seats`.
    pub(crate) fn public_sections(&self, include_sequence: bool) -> BTreeMap<String, Value> {
        let mut top = BTreeMap::new();
        top.insert(
            "kernelVersion".to_owned(),
            Value::Number(f64::from(KERNEL_VERSION)),
        );
        if include_sequence {
            top.insert(
                "sequence".to_owned(),
                Value::Number(crate::num::count_to_f64(self.sequence)),
            );
        }
        top.insert("settings".to_owned(), Value::Object(self.settings.clone()));
        top.insert("players".to_owned(), id_map(&self.players, player_value));
        top.insert("seats".to_owned(), id_map(&self.seats, seat_value));
        top
    }

    /// The full canonical JSON (with `sequence`), as `--state-out` writes it.
    pub fn canonical_json(&self) -> String {
        let mut out = String::new();
        self.write_canonical(true, &mut |chunk| out.push_str(chunk));
        out
    }

    /// Writes the canonical JSON of [`State::to_value`] in chunks to `sink`,
    /// one entity at a time: the same bytes, without the whole document's
    /// value tree or text in memory at once.
    pub fn write_canonical(&self, include_sequence: bool, sink: &mut dyn FnMut(&str)) {
        let mut buf = String::with_capacity(CHUNK_BYTES);
        buf.push_str("{\"entities\":{");
        for (i, e) in self.entities_in_key_order().into_iter().enumerate() {
            if i > 0 {
                buf.push(',');
            }
            write_string(&e.id, &mut buf);
            buf.push(':');
            write_entity(e, &mut buf);
            if buf.len() >= CHUNK_BYTES {
                sink(&buf);
                buf.clear();
            }
        }
        buf.push_str("},\"kernelVersion\":");
        write_number(f64::from(KERNEL_VERSION), &mut buf);
        if let Some(m) = &self.match_book {
            buf.push_str(",\"match\":");
            buf.push_str(m);
        }
        let rest: [(&str, Value); 9] = [
            ("players", id_map(&self.players, player_value)),
            ("prompts", id_map(&self.prompts, Prompt::to_value)),
            ("rng", self.rng.to_value()),
            ("seats", id_map(&self.seats, seat_value)),
            (
                "sequence",
                Value::Number(crate::num::count_to_f64(self.sequence)),
            ),
            ("settings", Value::Object(self.settings.clone())),
            ("stacks", id_map(&self.stacks, stack_value)),
            ("storage", Value::Object(self.storage.clone())),
            ("timers", id_map(&self.timers, Timer::to_value)),
        ];
        for (key, value) in rest {
            if key == "sequence" && !include_sequence {
                continue;
            }
            buf.push(',');
            write_string(key, &mut buf);
            buf.push(':');
            value.write_canonical(&mut buf);
        }
        buf.push('}');
        sink(&buf);
    }

    /// Live entities in the order a canonical object writes their ids
    /// (RFC 8785: UTF-16 code units; byte order unless an id holds a
    /// character from U+E000 up).
    fn entities_in_key_order(&self) -> Vec<&Entity> {
        let mut all = self.entities_sorted();
        if all.iter().any(|e| e.id.chars().any(|c| c >= '\u{E000}')) {
            all.sort_by(|a, b| utf16_cmp(&a.id, &b.id));
        }
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The vector published in docs/determinism.md.
    #[test]
    fn empty_state_vector_matches_docs() {
        let s = State::new(0);
        assert_eq!(
            s.to_value(false).to_canonical_json(),
            r#"{"entities":{},"kernelVersion":1,"players":{},"prompts":{},"rng":{"algorithm":"xoshiro256**","state":["e220a8397b1dcdaf","6e789e6aa1b965f4","06c45d188009454f","f88bb8a8724c81ec"]},"seats":{},"settings":{},"stacks":{},"storage":{},"timers":{}}"#
        );
        assert_eq!(
            s.hash(),
            "a55ba30f1e3831d590e6ee8cbb75ef5e688c9523912af31c6a4d2831f8579570"
        );
        let digests = s.digest_map();
        assert_eq!(
            digests.into_iter().collect::<Vec<_>>(),
            [
                ("kernelVersion".to_owned(), "981622dce9fe0e07".to_owned()),
                ("rng".to_owned(), "7d76289e0239ce79".to_owned())
            ]
        );
    }

    #[test]
    fn an_idle_entity_stays_well_under_a_kibibyte() {
        // The performance contract: memory per idle entity < 1 KiB. The slot holds the whole
        // component set inline; ids and tags add a few small allocations.
        eprintln!("size_of::<Entity>() = {}", std::mem::size_of::<Entity>());
        assert!(std::mem::size_of::<Entity>() < 640);
    }
}
