//! entity.spawn, entity.destroy.

use serde_json::Value as Json;

use crate::action::Action;
use crate::actions::find;
use crate::event::EventKind;
use crate::load::entity_from_def;
use crate::payload::{json_type, Payload};
use crate::placement::{detach, recompute_zones, remove_from_stack_emit};
use crate::reject::{reject, RejectCode, Rejection};
use crate::state::{EntityKey, Id, Placement, State};
use crate::txn::Txn;
use crate::value::Value;

/// `<prefabId>_<actionId>_<n>` for the n-th spawn of the action (1, 2, …),
/// or with the first unused `_<k>` suffix when an entity already has it.
pub(crate) fn spawned_id(state: &State, prefab_id: &str, action_id: &str, n: u32) -> String {
    let base = format!("{prefab_id}_{action_id}_{n}");
    if state.entity(&base).is_none() {
        return base;
    }
    (1u64..)
        .map(|k| format!("{base}_{k}"))
        .find(|c| state.entity(c).is_none())
        .unwrap_or(base)
}

/// A prefab instance with a deterministic id, optional transform and props.
pub(crate) fn spawn(txn: &mut Txn<'_>, action: &Action) -> Result<(), Rejection> {
    let p = Payload::new(&action.payload, &["prefabId", "transform", "props"])?;
    let prefab_id = p.id("prefabId")?;
    let transform = match p.opt("transform") {
        None => None,
        Some(_) => Some(p.transform("transform")?),
    };
    let props = match p.opt("props") {
        None => None,
        Some(v @ Json::Object(_)) => match Value::from_json(&v) {
            Ok(Value::Object(m)) => Some(m),
            _ => {
                return reject(
                    RejectCode::NotFinite,
                    "payload.props must hold canonical values",
                )
            }
        },
        Some(other) => {
            return reject(
                RejectCode::InvalidType,
                format!("payload.props must be an object, not {}", json_type(&other)),
            )
        }
    };
    let Some(def) = txn
        .state()
        .prefabs
        .get(prefab_id)
        .and_then(Json::as_object)
        .cloned()
    else {
        return reject(
            RejectCode::PrefabNotFound,
            format!("the game has no prefab \"{prefab_id}\""),
        );
    };
    let n = txn.next_spawn();
    let id = spawned_id(txn.state(), prefab_id, &txn.action_id().to_string(), n);
    let mut e = entity_from_def(&id, &def, "prefab")
        .map_err(|e| Rejection::new(RejectCode::InvalidValue, e.to_string()))?;
    if let Some(t) = transform {
        e.components.transform = Some(t);
    }
    if let Some(extra) = props {
        e.props.extend(extra);
    }
    let Some(key) = txn.insert_entity(e) else {
        return reject(
            RejectCode::InvalidValue,
            format!("entity id \"{id}\" is taken"),
        );
    };
    txn.emit(EventKind::EntitySpawned {
        entity_id: Id::from(id.as_str()),
        prefab_id: prefab_id.to_owned(),
    });
    recompute_zones(txn, &[key]);
    Ok(())
}

/// Cleans every membership and reference, then removes the entity; handles
/// to it become invalid (a later entity may be given the same id — a spawn
/// names its entity from the action id — but never the same handle).
pub(crate) fn destroy(txn: &mut Txn<'_>, action: &Action) -> Result<(), Rejection> {
    let p = Payload::new(&action.payload, &["entityId"])?;
    let entity_id = p.str("entityId")?;
    let (key, e) = find(txn.state(), entity_id, "entityId")?;
    let eid = e.id.clone();
    let held_by = e.held_by.clone();
    txn.note_gone(key);
    if let Some(holder) = held_by {
        txn.set_held_by(key, None);
        txn.emit(EventKind::EntityDropped {
            entity_id: eid.clone(),
            player_id: holder,
        });
    }
    match txn.state().get(key).map(|e| e.placement.clone()) {
        Some(Placement::Stack(sid)) => {
            let mut items = txn
                .state()
                .stacks
                .get(&sid)
                .map(|s| s.items.clone())
                .unwrap_or_default();
            items.retain(|x| *x != eid);
            remove_from_stack_emit(txn, sid, items);
            txn.set_placement(key, Placement::World);
        }
        _ => detach(txn, key),
    }
    let released = release_contents(txn, key, &eid);
    leave_zones(txn, &eid);
    txn.remove_entity(key);
    txn.emit(EventKind::EntityDestroyed { entity_id: eid });
    recompute_zones(txn, &released);
    Ok(())
}

/// A destroyed container's items and a destroyed snap point's attachments
/// go to the world.
fn release_contents(txn: &mut Txn<'_>, key: EntityKey, eid: &Id) -> Vec<EntityKey> {
    let Some(e) = txn.state().get(key) else {
        return Vec::new();
    };
    let items: Vec<Id> = e
        .components
        .container
        .as_ref()
        .map(|c| c.items.clone())
        .unwrap_or_default();
    let attached: Vec<Id> = e
        .components
        .snap_point
        .as_ref()
        .map(|s| s.attached.clone())
        .unwrap_or_default();
    let mut released = Vec::new();
    for (index, item) in items.iter().enumerate().rev() {
        if let Some(k) = txn.state().key(item) {
            txn.set_placement(k, Placement::World);
            released.push(k);
        }
        txn.emit(EventKind::ContainerRemoved {
            container_id: eid.clone(),
            entity_id: item.clone(),
            index: index as u64,
        });
    }
    for item in attached {
        if let Some(k) = txn.state().key(&item) {
            txn.set_placement(k, Placement::World);
            released.push(k);
        }
        txn.emit(EventKind::SnapDetached {
            snap_point_id: eid.clone(),
            entity_id: item,
        });
    }
    if let Some(e) = txn.entity_mut(key) {
        if let Some(c) = e.components.container.as_mut() {
            c.items.clear();
        }
        if let Some(s) = e.components.snap_point.as_mut() {
            s.attached.clear();
        }
    }
    released
}

/// Removes the entity from every zone it is a member of (`zone.left`).
fn leave_zones(txn: &mut Txn<'_>, eid: &Id) {
    let zones: Vec<Id> = txn.state().spatial().zones().to_vec();
    for zid in zones {
        let member = txn
            .state()
            .entity(&zid)
            .and_then(|z| z.components.zone.as_ref())
            .is_some_and(|z| z.members.binary_search(eid).is_ok());
        if member && zid != *eid {
            if let Some(zkey) = txn.state().key(&zid) {
                txn.set_zone_member(zkey, eid, false);
                txn.emit(EventKind::ZoneLeft {
                    zone_id: zid,
                    entity_id: eid.clone(),
                });
            }
        }
    }
}
