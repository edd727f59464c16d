//! Derived indexes for placement resolution, so a drop never scans the room.
//!
//! - `by_position`: entity ids per exact canonical position (positions are on
//!   the 0.0001 grid, so `round(v * 10000)` is an exact integer key). Finds
//!   exact-position stack targets in O(entities at that spot).
//! - `snap_grid`: snap points bucketed in a uniform 3-D grid whose cell edge
//!   is the largest snap radius in the room, so the snap points within reach
//!   of a drop lie in the 27 cells around it.
//! - `zones`: zone entity ids, sorted.
//!
//! Nothing here is canonical or serialized: it is rebuilt from the state at
//! load, and kept in step by the transaction (every transform change goes
//! through `Txn::set_transform`, whose undo record re-indexes on rollback).
//! Iteration order of the hash maps is never observed: buckets hold sorted
//! id lists and every caller sorts its candidates.

use rustc_hash::FxHashMap;

use crate::id::Id;
use crate::transform::Vec3;

/// Index buckets as sorted `(key, ids)` pairs, for comparisons.
pub type Buckets = Vec<(PosKey, Vec<Id>)>;

/// An exact grid position key.
pub type PosKey = [i64; 3];

/// The key of a canonical (quantized) position.
pub fn pos_key(p: Vec3) -> PosKey {
    [grid(p.x), grid(p.y), grid(p.z)]
}

// `as` saturates (and maps NaN to 0) deterministically; positions are
// validated finite and bounded before they reach the index.
#[allow(clippy::cast_possible_truncation)]
fn grid(v: f64) -> i64 {
    (v * 10_000.0).round() as i64
}

/// Derived lookup structures (see module docs).
#[derive(Clone, Debug, Default)]
pub struct Spatial {
    by_position: FxHashMap<PosKey, Vec<Id>>,
    snap_cell: f64,
    snap_grid: FxHashMap<PosKey, Vec<Id>>,
    zones: Vec<Id>,
}

fn insert_sorted(list: &mut Vec<Id>, id: &Id) {
    if let Err(i) = list.binary_search(id) {
        list.insert(i, id.clone());
    }
}

fn remove_sorted(list: &mut Vec<Id>, id: &Id) {
    if let Ok(i) = list.binary_search(id) {
        list.remove(i);
    }
}

/// What the indexes need to know of an entity (the state builds it; the
/// index knows nothing else of entities).
#[derive(Clone, Copy, Debug)]
pub struct Footprint<'a> {
    /// The entity's id.
    pub id: &'a Id,
    /// Its position, when it has a transform.
    pub position: Option<Vec3>,
    /// Its snap radius, when it is a snap point.
    pub snap_radius: Option<f64>,
    /// Whether it is a zone.
    pub zone: bool,
}

impl Spatial {
    /// Builds the indexes over `entities`.
    pub fn build<'a>(entities: impl Iterator<Item = Footprint<'a>> + Clone) -> Spatial {
        let radius_max = entities
            .clone()
            .filter_map(|e| e.snap_radius)
            .fold(0.0f64, f64::max);
        Spatial::build_with_cell(entities, radius_max.max(1.0))
    }

    /// Builds the indexes with a given snap-grid cell edge (at least the
    /// largest radius).
    pub fn build_with_cell<'a>(
        entities: impl Iterator<Item = Footprint<'a>>,
        cell: f64,
    ) -> Spatial {
        let mut s = Spatial {
            snap_cell: cell,
            ..Spatial::default()
        };
        for e in entities {
            s.add(e);
        }
        s
    }

    /// Indexes one entity (its position, snap point and zone).
    pub fn add(&mut self, e: Footprint<'_>) {
        if let Some(p) = e.position {
            self.place(e, None, Some(p));
        }
        if e.zone {
            insert_sorted(&mut self.zones, e.id);
        }
    }

    /// Removes one entity from every index.
    pub fn remove(&mut self, e: Footprint<'_>) {
        if let Some(p) = e.position {
            self.place(e, Some(p), None);
        }
        remove_sorted(&mut self.zones, e.id);
    }

    /// Moves `e` from `old` to `new` position (either may be absent).
    pub fn place(&mut self, e: Footprint<'_>, old: Option<Vec3>, new: Option<Vec3>) {
        let snap = e.snap_radius.is_some();
        if let Some(p) = old {
            if let Some(list) = self.by_position.get_mut(&pos_key(p)) {
                remove_sorted(list, e.id);
                if list.is_empty() {
                    self.by_position.remove(&pos_key(p));
                }
            }
            if snap {
                let cell = self.cell(p);
                if let Some(list) = self.snap_grid.get_mut(&cell) {
                    remove_sorted(list, e.id);
                    if list.is_empty() {
                        self.snap_grid.remove(&cell);
                    }
                }
            }
        }
        if let Some(p) = new {
            insert_sorted(self.by_position.entry(pos_key(p)).or_default(), e.id);
            if snap {
                let cell = self.cell(p);
                insert_sorted(self.snap_grid.entry(cell).or_default(), e.id);
            }
        }
    }

    // As `grid`: a saturating, deterministic conversion of a bounded value.
    #[allow(clippy::cast_possible_truncation)]
    fn cell(&self, p: Vec3) -> PosKey {
        let c = |v: f64| (v / self.snap_cell).floor() as i64;
        [c(p.x), c(p.y), c(p.z)]
    }

    /// The snap grid's cell edge.
    pub fn snap_cell(&self) -> f64 {
        self.snap_cell
    }

    /// Whether a snap point of this radius fits the grid's cell size
    /// (otherwise the grid must be rebuilt with a larger cell).
    pub fn snap_radius_fits(&self, radius: f64) -> bool {
        radius <= self.snap_cell
    }

    /// Ids of entities at exactly this position, sorted.
    pub fn at(&self, p: Vec3) -> &[Id] {
        self.by_position.get(&pos_key(p)).map_or(&[], Vec::as_slice)
    }

    /// Snap point ids whose cell lies next to `p` (a superset of those
    /// within reach), unsorted across cells.
    pub fn snap_candidates(&self, p: Vec3) -> Vec<Id> {
        let [cx, cy, cz] = self.cell(p);
        let mut out = Vec::new();
        for dx in -1..=1 {
            for dy in -1..=1 {
                for dz in -1..=1 {
                    if let Some(list) = self.snap_grid.get(&[cx + dx, cy + dy, cz + dz]) {
                        out.extend(list.iter().cloned());
                    }
                }
            }
        }
        out
    }

    /// Zone entity ids, sorted.
    pub fn zones(&self) -> &[Id] {
        &self.zones
    }

    /// A comparable summary (for invariant checks): positions and snap cells
    /// as sorted lists.
    pub fn fingerprint(&self) -> (Buckets, Buckets, Vec<Id>) {
        let mut a: Vec<_> = self
            .by_position
            .iter()
            .map(|(k, v)| (*k, v.clone()))
            .collect();
        let mut b: Vec<_> = self
            .snap_grid
            .iter()
            .map(|(k, v)| (*k, v.clone()))
            .collect();
        a.sort();
        b.sort();
        (a, b, self.zones.clone())
    }
}
