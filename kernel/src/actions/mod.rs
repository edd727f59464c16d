//! One file per action family. Each action is a flat chain of checks in
//! payload-field order (shapes first, then lookups and rules), then guards,
//! then the mutation through the transaction.

pub(crate) mod button;
pub(crate) mod container;
pub(crate) mod counter;
pub(crate) mod deck;
pub(crate) mod die;
pub(crate) mod entity;
pub(crate) mod lifecycle;
pub(crate) mod prompt;
pub(crate) mod snap;
pub(crate) mod stack;
pub(crate) mod system;
pub mod text;
pub(crate) mod timer;

use crate::action::{Action, ActionType};
use crate::host::{GuardKind, GuardRequest, ScriptHost, Verdict};
use crate::reject::{reject, RejectCode, Rejection};
use crate::state::{Entity, EntityKey, Id, State};
use crate::transform::Transform;
use crate::txn::Failure;
use crate::txn::Txn;

/// Validates and applies one action inside `txn`.
pub(crate) fn apply(
    txn: &mut Txn<'_>,
    ty: ActionType,
    action: &Action,
    host: &mut dyn ScriptHost,
) -> Result<(), Failure> {
    match ty {
        ActionType::GameStart => system::game_start(txn, action)?,
        ActionType::PlayerJoined => system::player_joined(txn, action)?,
        ActionType::PlayerLeft => system::player_left(txn, action)?,
        ActionType::SeatAssign => system::seat_assign(txn, action)?,
        ActionType::PlayerDisconnected => system::player_disconnected(txn, action)?,
        ActionType::PlayerRemoved => system::player_removed(txn, action)?,
        ActionType::EntitySpawn => lifecycle::spawn(txn, action)?,
        ActionType::EntityDestroy => lifecycle::destroy(txn, action)?,
        ActionType::DeckDrawToWorld => deck::draw_to_world(txn, action)?,
        ActionType::DeckDeal => deck::deal(txn, action)?,
        ActionType::DieSetValue => die::set_value(txn, action)?,
        ActionType::EntityGrab => entity::grab(txn, action, host)?,
        ActionType::EntityFlip => entity::flip(txn, action, host)?,
        ActionType::EntityDrop => entity::drop(txn, action, host)?,
        ActionType::EntityMove => entity::move_to(txn, action)?,
        ActionType::EntitySetLocked => entity::set_locked(txn, action)?,
        ActionType::ContainerMove => container::move_entity(txn, action)?,
        ActionType::StackCreate => stack::create(txn, action)?,
        ActionType::StackAdd => stack::add(txn, action)?,
        ActionType::StackMerge => stack::merge(txn, action)?,
        ActionType::StackDissolve => stack::dissolve(txn, action)?,
        ActionType::StackRemoveTop => stack::remove_top(txn, action)?,
        ActionType::SnapAttach => snap::attach(txn, action)?,
        ActionType::PromptCreate => prompt::create(txn, action)?,
        ActionType::PromptCancel => prompt::cancel(txn, action)?,
        ActionType::PromptRespond => prompt::respond(txn, action)?,
        ActionType::TimerRegister => timer::register(txn, action)?,
        ActionType::TimerCancel => timer::cancel(txn, action)?,
        ActionType::TimerFire => timer::fire(txn, action)?,
        ActionType::DeckShuffle => deck::shuffle(txn, action)?,
        ActionType::DeckDrawToContainer => deck::draw_to_container(txn, action)?,
        ActionType::DieRoll => die::roll(txn, action)?,
        ActionType::CounterSet => counter::set(txn, action)?,
        ActionType::CounterAdd => counter::add(txn, action)?,
        ActionType::ButtonPress => button::press(txn, action, host)?,
        ActionType::TextSet => text::set(txn, action)?,
    }
    Ok(())
}

/// Finds the entity named by payload field `field`.
pub(crate) fn find<'a>(
    state: &'a State,
    id: &str,
    field: &str,
) -> Result<(EntityKey, &'a Entity), Rejection> {
    match state.key(id).and_then(|k| state.get(k).map(|e| (k, e))) {
        Some(found) => Ok(found),
        None => reject(
            RejectCode::EntityNotFound,
            format!("payload.{field}: no entity \"{id}\""),
        ),
    }
}

/// Rejects with `missing_component` unless `present`.
pub(crate) fn need(present: bool, e: &Entity, component: &str) -> Result<(), Rejection> {
    if present {
        Ok(())
    } else {
        reject(
            RejectCode::MissingComponent,
            format!("entity \"{}\" has no {component} component", e.id),
        )
    }
}

/// Rejects with `component_disabled` unless `enabled`.
pub(crate) fn need_enabled(enabled: bool, e: &Entity, component: &str) -> Result<(), Rejection> {
    if enabled {
        Ok(())
    } else {
        reject(
            RejectCode::ComponentDisabled,
            format!("entity \"{}\" has its {component} component disabled", e.id),
        )
    }
}

/// The shared id of a player the source check already found.
pub(crate) fn player_id(txn: &Txn<'_>, player: &str) -> Id {
    txn.state()
        .players
        .get_key_value(player)
        .map_or_else(|| Id::from(player), |(k, _)| k.clone())
}

/// Asks the creator guards; a denial or failure stops the action.
pub(crate) fn run_guard(
    txn: &Txn<'_>,
    host: &mut dyn ScriptHost,
    kind: GuardKind,
    player_id: &str,
    entity: (EntityKey, &str),
    transform: Option<&Transform>,
) -> Result<(), Failure> {
    let request = GuardRequest {
        kind,
        player_id,
        entity_id: entity.1,
        entity_key: entity.0,
        transform,
    };
    match host.guard(txn.state(), &request) {
        Verdict::Allow => Ok(()),
        Verdict::Deny { reason } => Err(Failure::Rejected(Rejection::new(
            RejectCode::GuardDenied,
            reason.unwrap_or_else(|| format!("{} refused", kind.function_name())),
        ))),
        Verdict::Fail(f) => Err(Failure::Script(f)),
    }
}
