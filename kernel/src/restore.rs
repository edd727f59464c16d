//! Rebuilding a room's state from its canonical document (a save game).
//!
//! The document is what `State::canonical_json` wrote. It is read with the
//! same checks as `game.json` entities, plus what only a running room has
//! (players, seat occupants, holders, stacks, prompts, timers, storage, the
//! RNG and the sequence). The rebuilt state must write the very same
//! canonical bytes back: anything lost or altered on the way is an error
//! naming the first differing path, never a silently different room.

use std::collections::BTreeMap;

use serde_json::Value as Json;

use crate::def::{as_object, err, nonempty_str, only_keys, LoadError};
use crate::load::{check_owners, link_containers, load_stacks, settings_from};
use crate::rng::Rng;
use crate::state::{Id, Player, Prompt, State, Timer};
use crate::value::Value;

const STATE_KEYS: &[&str] = &[
    "kernelVersion",
    "sequence",
    "settings",
    "players",
    "seats",
    "entities",
    "stacks",
    "prompts",
    "timers",
    "storage",
    "rng",
];

/// Rebuilds a state from its canonical document. `game` supplies what the
/// canonical state does not hold (prefab definitions, the seat order).
///
/// # Errors
/// The document is not a canonical state this kernel wrote, with the path
/// of the first problem.
pub fn state_from_canonical(game: &State, doc: &Json) -> Result<State, LoadError> {
    let top = as_object(doc, "state")?;
    let mut allowed = STATE_KEYS.to_vec();
    allowed.push("match");
    only_keys(top, &allowed, "state")?;
    for key in STATE_KEYS {
        if !top.contains_key(*key) {
            return err(
                "state",
                format!("\"{key}\" is missing: this is not a canonical state written by `run --state-out` or `--save`"),
            );
        }
    }
    if top.get("kernelVersion").and_then(Json::as_f64) != Some(1.0) {
        return err("state.kernelVersion", "this engine runs kernelVersion 1");
    }
    let mut state = State::new(0);
    state.prefabs = game.prefabs.clone();
    state.seat_order = game.seat_order.clone();
    state.api_version = game.api_version;
    state.sequence = top
        .get("sequence")
        .and_then(Json::as_u64)
        .ok_or_else(|| LoadError {
            path: "state.sequence".into(),
            message: "must be a non-negative integer".into(),
        })?;
    state.settings = settings_from(&top["settings"], "state.settings")?;
    for (id, p) in as_object(&top["players"], "state.players")? {
        let path = format!("state.players[\"{id}\"]");
        let o = as_object(p, &path)?;
        only_keys(o, &["name"], &path)?;
        let name = match o.get("name") {
            None | Some(Json::Null) => None,
            Some(Json::String(s)) => Some(s.clone()),
            Some(_) => return err(&format!("{path}.name"), "must be a string or null"),
        };
        state.players.insert(Id::from(id.as_str()), Player { name });
    }
    for (seat, occupant) in as_object(&top["seats"], "state.seats")? {
        let path = format!("state.seats[\"{seat}\"]");
        let who = match occupant {
            Json::Null => None,
            v => Some(Id::from(nonempty_str(v, &path)?)),
        };
        state.seats.insert(Id::from(seat.as_str()), who);
    }
    load_entities(&mut state, &top["entities"])?;
    load_stacks(&mut state, &top["stacks"])?;
    link_containers(&mut state)?;
    check_owners(&state)?;
    state.rebuild_indexes();
    state.prompts = records(
        &top["prompts"],
        "state.prompts",
        "a prompt record (kind, playerId, title, choices, min, max, step, default, status open, resolved or canceled, response)",
        Prompt::from_value,
    )?;
    state.timers = records(
        &top["timers"],
        "state.timers",
        "a scheduled timer record (delay, callback, scriptId, bindingId, entityId, status \"scheduled\")",
        Timer::from_value,
    )?;
    match Value::from_json(&top["storage"]) {
        Ok(Value::Object(s)) => {
            state.storage = s;
            state.storage_stamp = crate::state::fresh_storage_stamp();
        }
        _ => return err("state.storage", "must be an object of canonical values"),
    }
    state.rng = rng(&top["rng"])?;
    // The match bookkeeping is the room's (docs/match.md): any canonical
    // object, checked again by the room that resumes it.
    if let Some(m) = top.get("match") {
        match Value::from_json(m) {
            Ok(v @ Value::Object(_)) => state.match_book = Some(v.to_canonical_json()),
            _ => return err("state.match", "must be an object of canonical values"),
        }
    }
    same_bytes(&state, doc)?;
    consistent(&state)?;
    Ok(state)
}

/// What only a running room can produce, checked: a started room, holders
/// and seat occupants who are players, and prompt and timer records of the
/// kernel's own shape.
fn consistent(state: &State) -> Result<(), LoadError> {
    if state.sequence == 0 {
        return err(
            "state.sequence",
            "0 is a room that has not started; a save is taken after system.game_start",
        );
    }
    for e in state.entities_sorted() {
        if let Some(p) = &e.held_by {
            if !state.players.contains_key(p) {
                return err(
                    &format!("state.entities[\"{}\"].heldBy", e.id),
                    format!("\"{p}\" is not a player in the room"),
                );
            }
        }
    }
    for (seat, who) in &state.seats {
        if let Some(p) = who {
            if !state.players.contains_key(p) {
                return err(
                    &format!("state.seats[\"{seat}\"]"),
                    format!("\"{p}\" is not a player in the room"),
                );
            }
        }
    }
    Ok(())
}

/// Entities keyed by id, as the canonical state writes them.
fn load_entities(state: &mut State, entities: &Json) -> Result<(), LoadError> {
    for (id, e) in as_object(entities, "state.entities")? {
        let path = format!("state.entities[\"{id}\"]");
        let mut obj = as_object(e, &path)?.clone();
        if obj.get("id").and_then(Json::as_str) != Some(id.as_str()) {
            return err(
                &format!("{path}.id"),
                "must equal the key it is stored under",
            );
        }
        // Derived fields: who holds it is restored after the definition
        // is read; zone members are recomputed from positions.
        let held_by = match obj.remove("heldBy") {
            None | Some(Json::Null) => None,
            Some(v) => Some(Id::from(nonempty_str(&v, &format!("{path}.heldBy"))?)),
        };
        if let Some(zone) = obj
            .get_mut("components")
            .and_then(|c| c.get_mut("zone"))
            .and_then(Json::as_object_mut)
        {
            zone.remove("members");
        }
        let mut entity = crate::load::entity_from_def(id, &obj, &path)?;
        entity.held_by = held_by;
        state.insert_entity(entity).map_err(|m| LoadError {
            path: path.clone(),
            message: m,
        })?;
    }
    Ok(())
}

fn records<T>(
    v: &Json,
    path: &str,
    what: &str,
    read: fn(&Value) -> Option<T>,
) -> Result<BTreeMap<Id, T>, LoadError> {
    let mut out = BTreeMap::new();
    for (id, r) in as_object(v, path)? {
        match Value::from_json(r).ok().as_ref().and_then(read) {
            Some(record) => {
                out.insert(Id::from(id.as_str()), record);
            }
            None => return err(&format!("{path}[\"{id}\"]"), format!("must be {what}")),
        }
    }
    Ok(out)
}

fn rng(v: &Json) -> Result<Rng, LoadError> {
    let o = as_object(v, "state.rng")?;
    only_keys(o, &["algorithm", "state"], "state.rng")?;
    if o.get("algorithm").and_then(Json::as_str) != Some("xoshiro256**") {
        return err("state.rng.algorithm", "must be \"xoshiro256**\"");
    }
    let words: Option<Vec<u64>> = o.get("state").and_then(Json::as_array).map(|list| {
        list.iter()
            .filter_map(|w| w.as_str().and_then(|s| u64::from_str_radix(s, 16).ok()))
            .collect()
    });
    match words.as_deref() {
        Some(&[a, b, c, d]) => Rng::from_state([a, b, c, d]).ok_or_else(|| LoadError {
            path: "state.rng.state".into(),
            message: "an all-zero xoshiro state cannot be resumed".into(),
        }),
        _ => err(
            "state.rng.state",
            "must be four 64-bit words written as hex strings",
        ),
    }
}

/// The rebuilt state writes exactly the document it was read from.
fn same_bytes(state: &State, doc: &Json) -> Result<(), LoadError> {
    let want = Value::from_json(doc).map_err(|m| LoadError {
        path: "state".into(),
        message: m.to_string(),
    })?;
    let got = state.to_value(true);
    match first_difference(&want, &got, "state") {
        None => Ok(()),
        Some(path) => err(
            &path,
            "differs from what this state resumes as (the file was edited by hand, or written by another version)",
        ),
    }
}

fn first_difference(a: &Value, b: &Value, path: &str) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            keys.into_iter().find_map(|k| match (x.get(k), y.get(k)) {
                (Some(p), Some(q)) => first_difference(p, q, &format!("{path}.{k}")),
                _ => Some(format!("{path}.{k}")),
            })
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (p, q))| first_difference(p, q, &format!("{path}[{i}]"))),
        _ if a == b => None,
        _ => Some(path.to_owned()),
    }
}
