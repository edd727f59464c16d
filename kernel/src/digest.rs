//! The state hash and the per-part digests a record names, kept up to date
//! from what each committed transaction touched (docs/determinism.md, State
//! hash).
//!
//! The gameplay document is cut into leaves: one per entity, player,
//! prompt, seat, setting, stack, script storage and timer, and one each for
//! `kernelVersion` and `rng`. A leaf's digest is the 128-bit XXH3 hash of
//! its canonical text; the state hash is blake3 of the sum of every leaf
//! digest modulo 2^128. A sum can be brought up to date by taking out a
//! touched leaf's old digest and adding its new one, so hashing after an
//! action costs what the action touched, never the table.

use std::collections::BTreeMap;

use slotmap::SecondaryMap;

use crate::canonical::{player_value, seat_value, stack_value, write_entity};
use crate::entity::Entity;
use crate::id::Id;
use crate::state::{EntityKey, State, KERNEL_VERSION};
use crate::value::{write_number, write_string};

/// A leaf digest: the 128-bit XXH3 hash of the leaf's bytes.
pub(crate) type Leaf = u128;

/// A top-level member of the gameplay document, in the document's key
/// order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Section {
    /// `entities`: one leaf per entity.
    Entities,
    /// `kernelVersion`: one leaf.
    KernelVersion,
    /// `match`: one leaf, present only in a room that runs a match.
    Match,
    /// `players`: one leaf per player.
    Players,
    /// `prompts`: one leaf per prompt.
    Prompts,
    /// `rng`: one leaf.
    Rng,
    /// `seats`: one leaf per seat.
    Seats,
    /// `settings`: one leaf per setting.
    Settings,
    /// `stacks`: one leaf per stack.
    Stacks,
    /// `storage`: one leaf per script's storage.
    Storage,
    /// `timers`: one leaf per timer.
    Timers,
}

/// The sections whose members are leaves of their own (besides entities).
const KEYED: [Section; 7] = [
    Section::Players,
    Section::Prompts,
    Section::Seats,
    Section::Settings,
    Section::Stacks,
    Section::Storage,
    Section::Timers,
];

impl Section {
    /// Its key in the canonical document.
    pub fn name(self) -> &'static str {
        match self {
            Section::Entities => "entities",
            Section::KernelVersion => "kernelVersion",
            Section::Match => "match",
            Section::Players => "players",
            Section::Prompts => "prompts",
            Section::Rng => "rng",
            Section::Seats => "seats",
            Section::Settings => "settings",
            Section::Stacks => "stacks",
            Section::Storage => "storage",
            Section::Timers => "timers",
        }
    }
}

/// What a committed transaction touched, read from its undo records.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Touch {
    Entity(EntityKey),
    /// One member of a keyed section.
    Keyed(Section, Id),
    /// Every setting (settings are replaced whole).
    Settings,
    Rng,
}

/// One leaf an action changed: its path in the document and its new short
/// digest (`None`: the leaf is gone).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeafChange {
    /// The section.
    pub section: Section,
    /// The member's key (entity id, player id, setting name, …); `None` for
    /// `kernelVersion` and `rng`.
    pub key: Option<Id>,
    /// The first 8 bytes of the new leaf digest; `None` when removed.
    pub digest: Option<[u8; 8]>,
}

impl LeafChange {
    /// Writes its path (`entities.<id>`, `rng`, …) to `out`.
    pub fn write_path(&self, out: &mut String) {
        write_path(self.section, self.key.as_deref(), out);
    }

    /// Its path (`entities.<id>`, `rng`, …).
    pub fn path(&self) -> String {
        path(self.section, self.key.as_deref())
    }

    /// Its new short digest as 16 hex digits, or `None` when removed.
    pub fn hex(&self) -> Option<String> {
        self.digest.map(|d| short_hex(&d))
    }
}

/// Writes a leaf's path: `section.key`, or the section's name alone.
fn write_path(section: Section, key: Option<&str>, out: &mut String) {
    out.push_str(section.name());
    if let Some(k) = key {
        out.push('.');
        out.push_str(k);
    }
}

fn path(section: Section, key: Option<&str>) -> String {
    let mut out = String::new();
    write_path(section, key, &mut out);
    out
}

/// 8 bytes as 16 lowercase hex digits.
pub fn short_hex(bytes: &[u8; 8]) -> String {
    let mut out = String::with_capacity(16);
    write_hex(bytes, &mut out);
    out
}

/// Writes bytes as lowercase hex digits.
pub fn write_hex(bytes: &[u8], out: &mut String) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for b in bytes {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 0xf)]));
    }
}

fn leaf_of(bytes: &str) -> Leaf {
    xxhash_rust::xxh3::xxh3_128(bytes.as_bytes())
}

/// The short digest: the leaf digest's high 64 bits as 8 big-endian bytes
/// (the first 16 hex digits of its canonical hex form).
fn short(leaf: &Leaf) -> [u8; 8] {
    let [hi, ..] = leaf_halves(*leaf);
    hi.to_be_bytes()
}

/// (high, low) 64-bit halves.
fn leaf_halves(leaf: Leaf) -> [u64; 2] {
    let bytes = leaf.to_be_bytes();
    let (hi, lo) = bytes.split_at(8);
    let word = |b: &[u8]| {
        let mut w = [0u8; 8];
        w.copy_from_slice(b);
        u64::from_be_bytes(w)
    };
    [word(hi), word(lo)]
}

fn add(sum: &mut Leaf, x: &Leaf) {
    *sum = sum.wrapping_add(*x);
}

fn sub(sum: &mut Leaf, x: &Leaf) {
    *sum = sum.wrapping_sub(*x);
}

/// The state hash of a leaf sum: blake3 of its 16 little-endian bytes.
fn hash_of(sum: &Leaf) -> blake3::Hash {
    blake3::hash(&sum.to_le_bytes())
}

/// The leaf of an entity: `["entities",<id>,<entity>]`.
fn entity_leaf(e: &Entity, buf: &mut String) -> Leaf {
    buf.clear();
    buf.push_str("[\"entities\",");
    write_string(&e.id, buf);
    buf.push(',');
    write_entity(e, buf);
    buf.push(']');
    leaf_of(buf)
}

/// The leaf of one member of a keyed section, `[<section>,<key>,<value>]`,
/// when the member exists.
fn keyed_leaf(state: &State, section: Section, key: &str, buf: &mut String) -> Option<Leaf> {
    buf.clear();
    buf.push('[');
    write_string(section.name(), buf);
    buf.push(',');
    write_string(key, buf);
    buf.push(',');
    match section {
        Section::Players => player_value(state.players.get(key)?).write_canonical(buf),
        Section::Prompts => state.prompts.get(key)?.to_value().write_canonical(buf),
        Section::Seats => seat_value(state.seats.get(key)?).write_canonical(buf),
        Section::Settings => state.settings.get(key)?.write_canonical(buf),
        Section::Stacks => stack_value(state.stacks.get(key)?).write_canonical(buf),
        Section::Storage => state.storage().get(key)?.write_canonical(buf),
        Section::Timers => state.timers.get(key)?.to_value().write_canonical(buf),
        Section::Entities | Section::KernelVersion | Section::Rng | Section::Match => return None,
    }
    buf.push(']');
    Some(leaf_of(buf))
}

/// The leaf of a one-leaf section: `[<section>,<value>]`.
fn single_leaf(state: &State, section: Section, buf: &mut String) -> Leaf {
    buf.clear();
    buf.push('[');
    write_string(section.name(), buf);
    buf.push(',');
    match section {
        Section::Rng => state.rng.to_value().write_canonical(buf),
        Section::Match => buf.push_str(state.match_book.as_deref().unwrap_or("null")),
        _ => write_number(f64::from(KERNEL_VERSION), buf),
    }
    buf.push(']');
    leaf_of(buf)
}

/// The keys of a keyed section, in order.
fn keys(state: &State, section: Section) -> Vec<Id> {
    fn of<K: AsRef<str>, V>(m: &BTreeMap<K, V>) -> Vec<Id> {
        m.keys().map(|k| Id::from(k.as_ref())).collect()
    }
    match section {
        Section::Players => of(&state.players),
        Section::Prompts => of(&state.prompts),
        Section::Seats => of(&state.seats),
        Section::Settings => of(&state.settings),
        Section::Stacks => of(&state.stacks),
        Section::Storage => of(&state.storage),
        Section::Timers => of(&state.timers),
        Section::Entities | Section::KernelVersion | Section::Rng | Section::Match => Vec::new(),
    }
}

/// Where a leaf sits: its section, its key, and for an entity its slot.
struct At<'a> {
    section: Section,
    key: Option<&'a Id>,
    slot: EntityKey,
}

/// Calls `f` with every leaf of the state and its digest.
fn each_leaf(state: &State, f: &mut dyn FnMut(At<'_>, &Leaf)) {
    let mut buf = String::new();
    for (slot, e) in state.entities.iter() {
        if state.get(slot).is_some() {
            let at = At {
                section: Section::Entities,
                key: Some(&e.id),
                slot,
            };
            f(at, &entity_leaf(e, &mut buf));
        }
    }
    for section in [Section::KernelVersion, Section::Match, Section::Rng] {
        if section == Section::Match && state.match_book.is_none() {
            continue;
        }
        let at = At {
            section,
            key: None,
            slot: EntityKey::default(),
        };
        f(at, &single_leaf(state, section, &mut buf));
    }
    for section in KEYED {
        for key in keys(state, section) {
            if let Some(leaf) = keyed_leaf(state, section, &key, &mut buf) {
                let at = At {
                    section,
                    key: Some(&key),
                    slot: EntityKey::default(),
                };
                f(at, &leaf);
            }
        }
    }
}

impl State {
    /// The state hash (docs/determinism.md): blake3 of the sum, modulo
    /// 2^128, of every leaf digest of the gameplay document (every field
    /// except `sequence`, so a rejected action leaves it unchanged), hex.
    /// Computed from scratch; a [`crate::Kernel`] that tracks digests keeps
    /// it up to date per action instead.
    pub fn hash(&self) -> String {
        let mut sum: Leaf = 0;
        each_leaf(self, &mut |_, leaf| add(&mut sum, leaf));
        hash_of(&sum).to_hex().to_string()
    }

    /// Every leaf's path (`entities.<id>`, `players.<id>`, `rng`, …) with
    /// its short digest (16 hex digits), computed from scratch.
    pub fn digest_map(&self) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        each_leaf(self, &mut |at, leaf| {
            out.insert(
                path(at.section, at.key.map(|k| &**k)),
                short_hex(&short(leaf)),
            );
        });
        out
    }
}

/// One leaf's change: where, and its digest before and after (`None`:
/// absent).
#[derive(Clone, Debug)]
struct Swap {
    section: Section,
    key: Option<Id>,
    old: Option<Leaf>,
    new: Option<Leaf>,
}

/// Every leaf digest of a state and their sum, kept up to date from what
/// each committed transaction touched.
#[derive(Clone, Debug, Default)]
pub(crate) struct Digests {
    sum: Leaf,
    entities: SecondaryMap<EntityKey, (Id, Leaf)>,
    keyed: BTreeMap<(Section, Id), Leaf>,
    singles: BTreeMap<Section, Leaf>,
    /// Scratch text for one leaf at a time.
    buf: String,
    /// What the last committed action changed, leaf by leaf.
    changes: Vec<Swap>,
    /// The same, as handed out.
    public: Vec<LeafChange>,
    /// Leaves re-hashed by updates so far (the work they cost, counted).
    rehashed: u64,
}

impl Digests {
    /// Every leaf of `state`.
    pub(crate) fn build(state: &State) -> Digests {
        let mut d = Digests::default();
        each_leaf(state, &mut |at, leaf| {
            add(&mut d.sum, leaf);
            match (at.section, at.key) {
                (Section::Entities, Some(id)) => {
                    d.entities.insert(at.slot, (id.clone(), *leaf));
                }
                (section, Some(id)) => {
                    d.keyed.insert((section, id.clone()), *leaf);
                }
                (section, None) => {
                    d.singles.insert(section, *leaf);
                }
            }
        });
        d
    }

    /// Appends the state hash, hex.
    pub(crate) fn write_hash(&self, out: &mut String) {
        out.push_str(hash_of(&self.sum).to_hex().as_str());
    }

    /// Every leaf's path with its short digest.
    pub(crate) fn map(&self) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        let mut put = |section, key: Option<&Id>, leaf: &Leaf| {
            out.insert(path(section, key.map(|k| &**k)), short_hex(&short(leaf)));
        };
        for (id, leaf) in self.entities.values() {
            put(Section::Entities, Some(id), leaf);
        }
        for ((section, id), leaf) in &self.keyed {
            put(*section, Some(id), leaf);
        }
        for (section, leaf) in &self.singles {
            put(*section, None, leaf);
        }
        out
    }

    /// How many leaves updates have re-hashed so far.
    pub(crate) fn rehashed(&self) -> u64 {
        self.rehashed
    }

    /// The leaves the last committed action changed, in path order.
    pub(crate) fn changes(&self) -> &[LeafChange] {
        &self.public
    }

    /// Forgets the last action's changes (the next one changed nothing yet).
    pub(crate) fn clear_changes(&mut self) {
        self.public.clear();
    }

    /// Brings every touched leaf up to date.
    pub(crate) fn update(&mut self, state: &State, touched: &mut Vec<Touch>) {
        self.changes.clear();
        self.public.clear();
        touched.sort_unstable();
        touched.dedup();
        for t in touched.drain(..) {
            match t {
                Touch::Entity(k) => self.entity(state, k),
                Touch::Keyed(section, key) => self.keyed(state, section, key),
                Touch::Settings => {
                    let mut all = keys(state, Section::Settings);
                    let stored = self
                        .keyed
                        .range((Section::Settings, Id::from(""))..(Section::Stacks, Id::from("")))
                        .map(|((_, k), _)| k.clone());
                    all.extend(stored);
                    all.sort_unstable();
                    all.dedup();
                    for key in all {
                        self.keyed(state, Section::Settings, key);
                    }
                }
                Touch::Rng => self.single(state, Section::Rng),
            }
        }
        self.publish();
    }

    /// Brings the match bookkeeping's leaf up to date between actions,
    /// adding its change to the last action's changes (recorded with the
    /// action it followed).
    pub(crate) fn update_match(&mut self, state: &State) {
        self.changes.clear();
        self.single(state, Section::Match);
        for sw in std::mem::take(&mut self.changes) {
            self.public
                .retain(|c| !(c.section == sw.section && c.key == sw.key));
            self.public.push(LeafChange {
                section: sw.section,
                key: sw.key,
                digest: sw.new.as_ref().map(short),
            });
        }
        self.public
            .sort_by(|a, b| (a.section, &a.key).cmp(&(b.section, &b.key)));
    }

    /// Re-hashes a one-leaf section (`match` may be absent).
    fn single(&mut self, state: &State, section: Section) {
        self.rehashed += 1;
        let new = (section != Section::Match || state.match_book.is_some())
            .then(|| single_leaf(state, section, &mut self.buf));
        let old = match new {
            Some(n) => self.singles.insert(section, n),
            None => self.singles.remove(&section),
        };
        self.swap(section, None, old, new);
    }

    fn entity(&mut self, state: &State, k: EntityKey) {
        // The common case: an entity changed in place (no id to copy).
        if let (Some(e), Some((id, leaf))) = (state.get(k), self.entities.get_mut(k)) {
            if *id == e.id {
                self.rehashed += 1;
                let new = entity_leaf(e, &mut self.buf);
                let old = std::mem::replace(leaf, new);
                if old != new {
                    let id = id.clone();
                    self.swap(Section::Entities, Some(id), Some(old), Some(new));
                }
                return;
            }
        }
        let new = state.get(k).map(|e| {
            self.rehashed += 1;
            (e.id.clone(), entity_leaf(e, &mut self.buf))
        });
        let old = match &new {
            Some(n) => self.entities.insert(k, n.clone()),
            None => self.entities.remove(k),
        };
        match (old, new) {
            (Some((a, x)), Some((b, y))) if a != b => {
                self.swap(Section::Entities, Some(a), Some(x), None);
                self.swap(Section::Entities, Some(b), None, Some(y));
            }
            (old, new) => {
                let id = new.as_ref().or(old.as_ref()).map(|(id, _)| id.clone());
                self.swap(
                    Section::Entities,
                    id,
                    old.map(|(_, l)| l),
                    new.map(|(_, l)| l),
                );
            }
        }
    }

    fn keyed(&mut self, state: &State, section: Section, key: Id) {
        let new = keyed_leaf(state, section, &key, &mut self.buf);
        self.rehashed += u64::from(new.is_some());
        let old = match new {
            Some(l) => self.keyed.insert((section, key.clone()), l),
            None => self.keyed.remove(&(section, key.clone())),
        };
        self.swap(section, Some(key), old, new);
    }

    /// Takes `old` out of the sum, puts `new` in, and notes the change.
    fn swap(&mut self, section: Section, key: Option<Id>, old: Option<Leaf>, new: Option<Leaf>) {
        if old == new {
            return;
        }
        if let Some(o) = &old {
            sub(&mut self.sum, o);
        }
        if let Some(n) = &new {
            add(&mut self.sum, n);
        }
        self.changes.push(Swap {
            section,
            key,
            old,
            new,
        });
    }

    /// Orders the changes by path and folds two changes of one path (an
    /// entity destroyed and another made under its id) into one.
    fn publish(&mut self) {
        let mut changes = std::mem::take(&mut self.changes);
        changes.sort_by(|a, b| (a.section, &a.key).cmp(&(b.section, &b.key)));
        let mut i = 0;
        while i < changes.len() {
            // One path may change twice in an action (an entity destroyed
            // and another made under its id), in either slot order; at
            // most one leaf existed before and at most one is there after.
            let first = &changes[i];
            let (mut old, mut new) = (first.old, first.new);
            let mut j = i + 1;
            while j < changes.len()
                && changes[j].section == first.section
                && changes[j].key == first.key
            {
                old = old.or(changes[j].old);
                new = new.or(changes[j].new);
                j += 1;
            }
            if old != new {
                let section = first.section;
                self.public.push(LeafChange {
                    section,
                    key: changes[i].key.take(),
                    digest: new.as_ref().map(short),
                });
            }
            i = j;
        }
        changes.clear();
        self.changes = changes;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sum_is_modulo_two_to_the_128() {
        let mut s = u128::MAX;
        add(&mut s, &1);
        assert_eq!(s, 0);
        sub(&mut s, &1);
        assert_eq!(s, u128::MAX);
        let x = 5u128 << 100 | 7;
        let before = s;
        add(&mut s, &x);
        sub(&mut s, &x);
        assert_eq!(s, before);
    }

    #[test]
    fn the_short_digest_is_the_high_half_in_hex_order() {
        let leaf: Leaf = 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210;
        assert_eq!(short_hex(&short(&leaf)), "0123456789abcdef");
    }
}
