//! Building the starting state from a parsed `game.json`.
//!
//! Every field is checked with a path to it (`entities["d6"].components.die`)
//! so a creator can find the mistake. Omitted fields take their defaults (see
//! `docs/formats.md`). Scripts, prefabs and setup are the host's business and
//! are only checked for shape here.

use std::collections::BTreeMap;

use serde_json::{Map, Value as Json};

use crate::cards::Made;
use crate::components::component;
pub use crate::components::COMPONENT_NAMES;
pub use crate::def::LoadError;
use crate::def::{as_object, err, nonempty_str, only_keys, string_list};
use crate::entity::{Reveal, Trip, Visibility};
use crate::state::{Entity, Id, Placement, Stack, State};
use crate::transform::Transform;
use crate::value::Value;

/// Top-level keys a `game.json` may have.
pub const GAME_KEYS: &[&str] = &[
    "id",
    "name",
    "version",
    "description",
    "kernelVersion",
    "apiVersion",
    "seats",
    "settings",
    "entities",
    "stacks",
    "scripts",
    "prefabs",
    "setup",
    "limits",
    "match",
];

const ENTITY_KEYS: &[&str] = &[
    "id",
    "tags",
    "props",
    "heldBy",
    "components",
    "trip",
    "revealedTo",
];

pub use crate::state::API_VERSION_LATEST;

/// The creator API version `game.json` names: its `apiVersion`, or 1 (the
/// first) when it has none.
///
/// # Errors
/// A value that is not a whole number from 1 to [`API_VERSION_LATEST`].
pub fn api_version(game: &Json) -> Result<u64, LoadError> {
    match game.get("apiVersion") {
        None => Ok(1),
        // A whole number, as JSON may write it (`3` or `3.0`).
        Some(v) => match (1..=API_VERSION_LATEST)
            .find(|&n| u32::try_from(n).is_ok_and(|n| v.as_f64() == Some(f64::from(n))))
        {
            Some(n) => Ok(n),
            None => err(
                "apiVersion",
                format!(
                    "must be a whole number from 1 to {API_VERSION_LATEST} (the creator API version the game was written for; this engine's newest is {API_VERSION_LATEST}), not {v}"
                ),
            ),
        },
    }
}

/// The keys of an entity of `game.json`'s `entities`: an entity's, and
/// `cards` (docs/formats.md, Card sets).
const GAME_ENTITY_KEYS: &[&str] = &[
    "id",
    "tags",
    "props",
    "heldBy",
    "components",
    "cards",
    "trip",
    "revealedTo",
];

/// Builds the starting state from a parsed `game.json`, seeded with `seed`.
///
/// # Errors
/// The first problem found, with its path.
pub fn state_from_game(game: &Json, seed: u64) -> Result<State, LoadError> {
    build(game, seed, &mut |state| match game.get("entities") {
        Some(entities) => load_entities(
            state,
            &mut Made::new(byte_budget(game), entity_from_def),
            entities,
        ),
        None => Ok(()),
    })
}

/// [`state_from_game`] for a manifest read without its `entities` (which
/// `game` does not hold), given as the JSON text of that key instead: the
/// entities (an array, or an object keyed by id) are read one at a time,
/// so a 100,000-entity game never exists as one JSON value tree. Same
/// state, same errors.
///
/// # Errors
/// The first problem found, with its path.
pub fn state_from_game_streamed(
    game: &Json,
    entities: &str,
    seed: u64,
) -> Result<State, LoadError> {
    build(game, seed, &mut |state| {
        let made = &mut Made::new(byte_budget(game), entity_from_def);
        let start = entities.trim_start();
        if start.starts_with('[') {
            load_entity_array(state, made, entities)
        } else if start.starts_with('{') {
            load_entity_object(state, made, entities)
        } else {
            // Any other shape (a wrong type) is read whole, as the
            // value-tree path reads it, for the same error.
            let value: Json = serde_json::from_str(entities).map_err(|e| LoadError {
                path: "entities".into(),
                message: e.to_string(),
            })?;
            load_entities(state, made, &value)
        }
    })
}

/// The byte budget a game asks for (`limits.bytesMax`), or the default:
/// what its card sets must fit in. (The host checks the field itself, and
/// the whole table against it, when it builds the room.)
fn byte_budget(game: &Json) -> u64 {
    game.get("limits")
        .and_then(|l| l.get("bytesMax"))
        .and_then(Json::as_u64)
        .unwrap_or(crate::txn::BYTES_MAX_DEFAULT)
}

/// The steps of loading a manifest; `entities` loads the entities.
fn build(
    game: &Json,
    seed: u64,
    entities: &mut dyn FnMut(&mut State) -> Result<(), LoadError>,
) -> Result<State, LoadError> {
    let top = as_object(game, "game.json")?;
    only_keys(top, GAME_KEYS, "game.json")?;
    if let Some(v) = top.get("kernelVersion") {
        if v.as_f64() != Some(1.0) {
            return err("kernelVersion", "this engine runs kernelVersion 1");
        }
    }
    let api = api_version(game)?;
    for key in ["id", "name", "version", "description", "setup"] {
        if let Some(v) = top.get(key) {
            if !v.is_string() {
                return err(key, "must be a string");
            }
        }
    }
    let mut state = State::new(seed);
    state.api_version = api;
    if let Some(seats) = top.get("seats") {
        let list = seats.as_array().ok_or_else(|| LoadError {
            path: "seats".into(),
            message: "must be an array of seat ids, like [\"north\", \"south\"]".into(),
        })?;
        for (i, s) in list.iter().enumerate() {
            let id = nonempty_str(s, &format!("seats[{i}]"))?;
            state.seat_order.push(Id::from(id));
            if state.seats.insert(Id::from(id), None).is_some() {
                return err(
                    &format!("seats[{i}]"),
                    format!("seat \"{id}\" is listed twice"),
                );
            }
        }
    }
    if let Some(settings) = top.get("settings") {
        state.settings = settings_from(settings, "settings")?;
    }
    entities(&mut state)?;
    if let Some(stacks) = top.get("stacks") {
        load_stacks(&mut state, stacks)?;
    }
    link_containers(&mut state)?;
    check_owners(&state)?;
    trips_on_load(&mut state);
    if let Some(prefabs) = top.get("prefabs") {
        load_prefabs(&mut state, prefabs)?;
    }
    state.rebuild_indexes();
    for key in ["scripts", "prefabs", "limits"] {
        if let Some(v) = top.get(key) {
            let ok = if key == "scripts" {
                v.is_array()
            } else {
                v.is_object()
            };
            if !ok {
                return err(
                    key,
                    if key == "scripts" {
                        "must be an array"
                    } else {
                        "must be an object"
                    },
                );
            }
        }
    }
    Ok(state)
}

/// Checks every prefab (an entity definition without id or cards) and
/// keeps its definition for `entity.spawn`.
fn load_prefabs(state: &mut State, prefabs: &Json) -> Result<(), LoadError> {
    let map = as_object(prefabs, "prefabs")?;
    for (pid, def) in map {
        let path = format!("prefabs[\"{pid}\"]");
        let obj = as_object(def, &path)?;
        if obj.contains_key("id") {
            return err(
                &format!("{path}.id"),
                "prefabs have no id: spawned entities get one from the spawning action",
            );
        }
        if obj.contains_key("cards") {
            return err(
                &format!("{path}.cards"),
                "a prefab's container starts empty: card sets belong to the entities of \"entities\"",
            );
        }
        let e = entity_from_def("", obj, &path)?;
        owner_is_a_seat(state, &e, &path)?;
        state.prefabs.insert(pid.clone(), def.clone());
    }
    Ok(())
}

/// Checks flat settings: boolean, finite number or string values only.
///
/// # Errors
/// A nested or null value, with its path.
pub fn settings_from(v: &Json, path: &str) -> Result<BTreeMap<String, Value>, LoadError> {
    let obj = as_object(v, path)?;
    let mut out = BTreeMap::new();
    for (k, v) in obj {
        let val = match v {
            Json::Bool(b) => Value::Bool(*b),
            Json::String(s) => Value::String(s.clone()),
            Json::Number(n) => match n.as_f64() {
                Some(f) if f.is_finite() => Value::Number(f),
                _ => return err(&format!("{path}.{k}"), "must be a finite number"),
            },
            _ => {
                return err(
                    &format!("{path}.{k}"),
                    "settings are flat: each value must be a boolean, number or string",
                )
            }
        };
        out.insert(k.clone(), val);
    }
    Ok(out)
}

fn load_entities(state: &mut State, made: &mut Made, entities: &Json) -> Result<(), LoadError> {
    match entities {
        Json::Array(list) => {
            for (i, e) in list.iter().enumerate() {
                load_array_entity(state, made, i, e)?;
            }
        }
        Json::Object(map) => {
            for (id, e) in map {
                load_keyed_entity(state, made, id, e)?;
            }
        }
        _ => {
            return err(
                "entities",
                "must be an array of entities or an object keyed by id",
            )
        }
    }
    Ok(())
}

/// `entities["id"]` of the object form.
fn load_keyed_entity(
    state: &mut State,
    made: &mut Made,
    id: &str,
    e: &Json,
) -> Result<(), LoadError> {
    let path = format!("entities[\"{id}\"]");
    if id.is_empty() {
        return err(&path, "entity ids must be non-empty");
    }
    let obj = as_object(e, &path)?;
    if let Some(inner) = obj.get("id") {
        if inner.as_str() != Some(id) {
            return err(
                &format!("{path}.id"),
                "must equal the key it is stored under",
            );
        }
    }
    add_entity(state, made, id, obj, &path)
}

/// The object form read lean: each entity stays text (a slice of
/// `text`) until its turn, in key order (a key given twice keeps its last
/// value), as the value-tree path reads it.
fn load_entity_object(state: &mut State, made: &mut Made, text: &str) -> Result<(), LoadError> {
    let entries: std::collections::BTreeMap<String, &serde_json::value::RawValue> =
        serde_json::from_str(text).map_err(|e| LoadError {
            path: "entities".into(),
            message: e.to_string(),
        })?;
    for (id, raw) in entries {
        let e: Json = serde_json::from_str(raw.get()).map_err(|e| LoadError {
            path: format!("entities[\"{id}\"]"),
            message: e.to_string(),
        })?;
        load_keyed_entity(state, made, &id, &e)?;
    }
    Ok(())
}

/// `entities[i]` of the array form.
fn load_array_entity(
    state: &mut State,
    made: &mut Made,
    i: usize,
    e: &Json,
) -> Result<(), LoadError> {
    let path = format!("entities[{i}]");
    let obj = as_object(e, &path)?;
    let id = match obj.get("id") {
        Some(v) => nonempty_str(v, &format!("{path}.id"))?,
        None => return err(&path, "every entity needs an \"id\""),
    };
    add_entity(state, made, id, obj, &format!("entities[\"{id}\"]"))
}

/// The array form read from its text one entity at a time (each entity is
/// a small value, dropped once loaded); the first problem wins, as in
/// [`load_entities`].
fn load_entity_array(state: &mut State, made: &mut Made, text: &str) -> Result<(), LoadError> {
    use serde::de::{Deserializer as _, IgnoredAny, SeqAccess, Visitor};
    struct Each<'s>(&'s mut State, &'s mut Made);
    impl<'de> Visitor<'de> for Each<'_> {
        type Value = Result<(), LoadError>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an array of entities")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut i = 0;
            while let Some(e) = seq.next_element::<Json>()? {
                if let Err(problem) = load_array_entity(self.0, self.1, i, &e) {
                    // The rest is read past (the text must still be whole).
                    while seq.next_element::<IgnoredAny>()?.is_some() {}
                    return Ok(Err(problem));
                }
                i += 1;
            }
            Ok(Ok(()))
        }
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let loaded = (&mut de).deserialize_seq(Each(state, made));
    match loaded.and_then(|r| de.end().map(|()| r)) {
        Ok(result) => result,
        Err(e) => err("entities", e.to_string()),
    }
}

/// Loads one entity of `game.json`, and the cards its `cards` makes
/// (docs/formats.md, Card sets).
fn add_entity(
    state: &mut State,
    made: &mut Made,
    id: &str,
    obj: &Map<String, Json>,
    path: &str,
) -> Result<(), LoadError> {
    let e = entity_def(id, obj, path, GAME_ENTITY_KEYS)?;
    if let Some(other) = made.origin(id) {
        return err(
            path,
            format!("the id \"{id}\" is already a card's: {other} makes it; rename one"),
        );
    }
    state.insert_entity(e).map_err(|m| LoadError {
        path: path.to_owned(),
        message: m,
    })?;
    if let Some(cards) = obj.get("cards") {
        crate::cards::expand(state, made, id, cards, &format!("{path}.cards"))?;
    }
    Ok(())
}

/// Builds an entity from its `game.json` definition (also used for
/// prefabs, whose definitions have no id).
///
/// # Errors
/// The first problem, with its path.
pub fn entity_from_def(id: &str, obj: &Map<String, Json>, path: &str) -> Result<Entity, LoadError> {
    entity_def(id, obj, path, ENTITY_KEYS)
}

/// [`entity_from_def`] with the keys `allowed` (a game's own entities may
/// also have `cards`, which [`add_entity`] reads).
fn entity_def(
    id: &str,
    obj: &Map<String, Json>,
    path: &str,
    allowed: &[&str],
) -> Result<Entity, LoadError> {
    only_keys(obj, allowed, path)?;
    let mut e = Entity::new(id);
    if let Some(tags) = obj.get("tags") {
        e.tags = string_list(tags, &format!("{path}.tags"))?;
        e.tags.sort();
        e.tags.dedup();
    }
    if let Some(props) = obj.get("props") {
        as_object(props, &format!("{path}.props"))?;
        match Value::from_json(props) {
            Ok(Value::Object(p)) => e.props = p,
            _ => {
                return err(
                    &format!("{path}.props"),
                    "must be an object of canonical values",
                )
            }
        }
    }
    if let Some(h) = obj.get("heldBy") {
        if !h.is_null() {
            return err(
                &format!("{path}.heldBy"),
                "entities start unheld: use null or leave it out",
            );
        }
    }
    if let Some(t) = obj.get("trip") {
        // Engine bookkeeping (docs/observations.md), read back from saves.
        e.secrecy.trip = Some(trip_from(t).ok_or_else(|| LoadError {
            path: format!("{path}.trip"),
            message: "must be [at, n]: two non-negative integers, n from 1 and below 2^32".into(),
        })?);
    }
    if let Some(r) = obj.get("revealedTo") {
        e.secrecy.revealed = reveal_from(r).ok_or_else(|| LoadError {
            path: format!("{path}.revealedTo"),
            message: "must be \"all\" or a non-empty list of seat ids".into(),
        })?;
    }
    if let Some(c) = obj.get("components") {
        let comps = as_object(c, &format!("{path}.components"))?;
        for (name, v) in comps {
            component(&mut e, name, v, &format!("{path}.components.{name}"))?;
        }
        if e.components
            .container
            .as_ref()
            .is_some_and(|c| !c.items.is_empty())
            && id.is_empty()
        {
            return err(
                &format!("{path}.components.container.items"),
                "a prefab's container starts empty",
            );
        }
    }
    Ok(e)
}

pub(crate) fn load_stacks(state: &mut State, stacks: &Json) -> Result<(), LoadError> {
    let map = as_object(stacks, "stacks")?;
    for (id, s) in map {
        let path = format!("stacks[\"{id}\"]");
        if id.is_empty() {
            return err(&path, "stack ids must be non-empty");
        }
        let o = as_object(s, &path)?;
        only_keys(o, &["items"], &path)?;
        let items = match o.get("items") {
            Some(v) => string_list(v, &format!("{path}.items"))?,
            None => Vec::new(),
        };
        if items.is_empty() {
            return err(&path, "a stack needs at least one item");
        }
        let sid = Id::from(id.as_str());
        let mut ids = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let ipath = format!("{path}.items[{i}]");
            let key = state.key(item).ok_or_else(|| LoadError {
                path: ipath.clone(),
                message: format!("no entity \"{item}\""),
            })?;
            let e = state.entity_mut(key).ok_or_else(|| LoadError {
                path: ipath.clone(),
                message: "entity vanished".into(),
            })?;
            if e.components.stackable.is_none() {
                return err(
                    &ipath,
                    format!("\"{item}\" needs a stackable component to be stacked"),
                );
            }
            if e.placement != Placement::World {
                return err(&ipath, format!("\"{item}\" is already placed elsewhere"));
            }
            e.placement = Placement::Stack(sid.clone());
            ids.push(e.id.clone());
        }
        state.stacks.insert(sid, Stack { items: ids });
    }
    Ok(())
}

/// Every private container's owner is one of the room's seats (a typo
/// would hide a hand from everyone).
pub(crate) fn check_owners(state: &State) -> Result<(), LoadError> {
    for e in state.entities_sorted() {
        owner_is_a_seat(state, e, &format!("entities[\"{}\"]", e.id))?;
    }
    Ok(())
}

/// A private container's owner, and every seat an entity is revealed to
/// (of the entity defined at `path`), are seats of the game.
fn owner_is_a_seat(state: &State, e: &Entity, path: &str) -> Result<(), LoadError> {
    let owner = e
        .components
        .container
        .as_ref()
        .and_then(|c| c.visibility.owner());
    if let Some(seat) = owner.filter(|s| !state.seats.contains_key(*s)) {
        return err(
            &format!("{path}.components.container.owner"),
            format!("\"{seat}\" is not one of the game's seats"),
        );
    }
    if let Reveal::Seats(seats) = &e.secrecy.revealed {
        if let Some(seat) = seats.iter().find(|s| !state.seats.contains_key(*s)) {
            return err(
                &format!("{path}.revealedTo"),
                format!("\"{seat}\" is not one of the game's seats"),
            );
        }
    }
    Ok(())
}

/// `[at, n]` with `n` from 1.
fn trip_from(v: &Json) -> Option<Trip> {
    match v.as_array()?.as_slice() {
        [at, n] => Some(Trip {
            at: at.as_u64().filter(|a| *a < 1 << 53)?,
            n: n.as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .filter(|n| *n > 0)?,
        }),
        _ => None,
    }
}

/// `"all"` or a non-empty list of seat ids (kept sorted and unique).
fn reveal_from(v: &Json) -> Option<Reveal> {
    if v.as_str() == Some("all") {
        return Some(Reveal::All);
    }
    let mut seats = v
        .as_array()?
        .iter()
        .map(|s| s.as_str().filter(|s| !s.is_empty()).map(Id::from))
        .collect::<Option<Vec<Id>>>()?;
    seats.sort_unstable();
    seats.dedup();
    (!seats.is_empty()).then_some(Reveal::Seats(seats))
}

/// What the game file puts in private or hidden containers — at any depth
/// — starts with a trip made while loading (`at` 0), numbered in container
/// order (containers by id, items in order, depth first), so its first
/// alias is drawn from where it lies, not from which card it is; and, as
/// after any trip, it lies where its hidden container is.
fn trips_on_load(state: &mut State) {
    let mut hidden: Vec<(Id, Option<Transform>)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for e in state.entities_sorted() {
        let Some(c) = &e.components.container else {
            continue;
        };
        if c.visibility == Visibility::Public {
            continue;
        }
        let place = e.components.transform;
        let mut todo: Vec<Id> = c.items.iter().rev().cloned().collect();
        while let Some(id) = todo.pop() {
            if !seen.insert(id.clone()) {
                continue;
            }
            if let Some(inner) = state
                .entity(&id)
                .and_then(|i| i.components.container.as_ref())
            {
                todo.extend(inner.items.iter().rev().cloned());
            }
            hidden.push((id, place));
        }
    }
    for (i, (id, place)) in hidden.iter().enumerate() {
        let n = u32::try_from(i + 1).unwrap_or(u32::MAX);
        if let Some(e) = state.key(id).and_then(|k| state.entity_mut(k)) {
            if e.secrecy.trip.is_none() {
                e.secrecy.trip = Some(Trip { at: 0, n });
                if let Some(t) = &mut e.components.transform {
                    *t = t.placed_at(*place);
                }
            }
        }
    }
}

/// Resolves container items and snap attachments into placements, checking
/// that each entity has at most one.
pub(crate) fn link_containers(state: &mut State) -> Result<(), LoadError> {
    for (hid, field, items) in holders(state)? {
        for (i, item) in items.iter().enumerate() {
            let path = format!("entities[\"{hid}\"].components.{field}[{i}]");
            if *item == hid {
                return err(&path, "an entity cannot hold itself");
            }
            let key = state.key(item).ok_or_else(|| LoadError {
                path: path.clone(),
                message: format!("no entity \"{item}\""),
            })?;
            let e = state.entity_mut(key).ok_or_else(|| LoadError {
                path: path.clone(),
                message: "entity vanished".into(),
            })?;
            if e.placement != Placement::World {
                return err(
                    &path,
                    format!("\"{item}\" is already placed elsewhere (an entity has exactly one placement)"),
                );
            }
            e.placement = if field == "container.items" {
                Placement::Container(hid.clone())
            } else {
                Placement::Snap(hid.clone())
            };
        }
    }
    refuse_container_cycles(state)?;
    share_item_ids(state);
    Ok(())
}

/// An entity that holds others: its id, the field naming them, their ids.
type Holder = (Id, &'static str, Vec<Id>);

/// Every entity that holds others, with a snap point's attachments checked
/// (no duplicates, within capacity).
fn holders(state: &State) -> Result<Vec<Holder>, LoadError> {
    let mut holders = Vec::new();
    for e in state.entities_sorted() {
        if let Some(c) = &e.components.container {
            holders.push((e.id.clone(), "container.items", c.items.clone()));
        }
        if let Some(s) = &e.components.snap_point {
            let mut seen = std::collections::BTreeSet::new();
            for t in &s.attached {
                if !seen.insert(t.clone()) {
                    return err(
                        &format!("entities[\"{}\"].components.snap_point.attached", e.id),
                        format!("\"{t}\" is listed twice"),
                    );
                }
            }
            if s.capacity.is_some_and(|c| s.attached.len() as u64 > c) {
                return err(
                    &format!("entities[\"{}\"].components.snap_point", e.id),
                    "more attachments than its capacity",
                );
            }
            holders.push((e.id.clone(), "snap_point.attached", s.attached.clone()));
        }
    }
    Ok(holders)
}

/// No container may hold itself through others (a cycle would make later
/// moves misjudge what holds what).
fn refuse_container_cycles(state: &State) -> Result<(), LoadError> {
    for e in state.entities_sorted() {
        let mut at = e.placement.clone();
        let mut steps = 0usize;
        while let Placement::Container(parent) = at {
            if parent == e.id {
                return err(
                    &format!("entities[\"{}\"]", e.id),
                    format!(
                        "\"{}\" is inside itself through its containers (a container cycle)",
                        e.id
                    ),
                );
            }
            steps += 1;
            if steps > state.entity_count() {
                break;
            }
            at = state
                .entity(&parent)
                .map_or(Placement::World, |p| p.placement.clone());
        }
    }
    Ok(())
}

/// Item lists share the entities' own ids, so the kernel finds an item by
/// pointer before comparing strings.
fn share_item_ids(state: &mut State) {
    let shared: Vec<(crate::state::EntityKey, Vec<Id>)> = state
        .entities_sorted()
        .into_iter()
        .filter_map(|e| {
            let c = e.components.container.as_ref()?;
            let items = c
                .items
                .iter()
                .map(|i| state.entity(i).map_or_else(|| i.clone(), |x| x.id.clone()))
                .collect();
            Some((state.key(&e.id)?, items))
        })
        .collect();
    for (key, items) in shared {
        if let Some(c) = state
            .entity_mut(key)
            .and_then(|e| e.components.container.as_mut())
        {
            c.items = items;
        }
    }
}
