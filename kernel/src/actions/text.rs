//! text.set.

use crate::action::Action;
use crate::actions::{find, need};
use crate::event::EventKind;
use crate::payload::Payload;
use crate::reject::{reject, RejectCode, Rejection};
use crate::state::TEXT_BYTES_MAX;
use crate::txn::Txn;

/// Stores the exact string.
pub(crate) fn set(txn: &mut Txn<'_>, action: &Action) -> Result<(), Rejection> {
    let p = Payload::new(&action.payload, &["entityId", "value"])?;
    let entity_id = p.str("entityId")?;
    let value = p.str("value")?;
    let (key, e) = find(txn.state(), entity_id, "entityId")?;
    need(e.components.text.is_some(), e, "text")?;
    if value.len() > TEXT_BYTES_MAX {
        return reject(
            RejectCode::TextTooLong,
            format!(
                "text is limited to {TEXT_BYTES_MAX} UTF-8 bytes, got {}",
                value.len()
            ),
        );
    }
    let eid = e.id.clone();
    if let Some(e) = txn.entity_mut(key) {
        e.components.text = Some(value.to_owned());
    }
    txn.emit(EventKind::TextChanged {
        entity_id: eid,
        value: value.to_owned(),
    });
    Ok(())
}
