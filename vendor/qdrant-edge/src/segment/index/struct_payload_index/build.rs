use crate::common::counter::hardware_counter::HardwareCounterCell;
use crate::common::types::PointOffsetType;

use super::StructPayloadIndex;
use crate::segment::common::operation_error::OperationResult;
use crate::segment::id_tracker::IdTrackerRead;
use crate::segment::index::field_index::{FieldIndex, FieldIndexBuilderTrait as _};
use crate::segment::payload_storage::PayloadStorageRead;
use crate::segment::types::{
    PayloadContainer, PayloadFieldSchema, PayloadKeyType, PayloadKeyTypeRef,
};

impl StructPayloadIndex {
    pub fn build_field_indexes(
        &self,
        field: PayloadKeyTypeRef,
        payload_schema: &PayloadFieldSchema,
        hw_counter: &HardwareCounterCell,
    ) -> OperationResult<Vec<FieldIndex>> {
        let fields = [(field.clone(), payload_schema.clone())];
        let mut built = self.build_fields_indexes(&fields, hw_counter)?;
        Ok(built.pop().unwrap_or_default())
    }

    /// The indexes of every field in `fields`, in order, built in one pass over the payload
    /// storage (kledger patch, `KLEDGER-PATCH.md` change 4; upstream builds one field per pass,
    /// and parsing the payloads is most of the cost).
    pub fn build_fields_indexes(
        &self,
        fields: &[(PayloadKeyType, PayloadFieldSchema)],
        hw_counter: &HardwareCounterCell,
    ) -> OperationResult<Vec<Vec<FieldIndex>>> {
        let payload_storage = self.payload.borrow();
        let id_tracker_borrow = self.id_tracker.borrow();
        // Special null index complements every index. Seed it with the segment's total
        // point count so `iter_falses()` returns points that are missing from payload
        // storage (e.g. after `clear_payload`), matching the regular "no value" points.
        // Bug: <https://github.com/qdrant/qdrant/issues/8723>
        let total_point_count = id_tracker_borrow.total_point_count();
        let mut all_builders = Vec::with_capacity(fields.len());
        for (field, payload_schema) in fields {
            let selector = self.selector(payload_schema);
            let mut builders = selector.index_builder(
                field,
                payload_schema,
                id_tracker_borrow.deleted_point_bitslice(),
            )?;
            builders.push(selector.null_builder(field, total_point_count)?);
            for index in &mut builders {
                index.init()?;
            }
            all_builders.push(builders);
        }

        payload_storage.iter(
            |point_id, point_payload| {
                for ((field, _), builders) in fields.iter().zip(all_builders.iter_mut()) {
                    let field_value = &point_payload.get_value(field);
                    for builder in builders.iter_mut() {
                        builder.add_point(point_id, field_value, hw_counter)?;
                    }
                }
                Ok(true)
            },
            hw_counter,
        )?;

        all_builders
            .into_iter()
            .map(|builders| {
                builders
                    .into_iter()
                    .map(|builder| builder.finalize())
                    .collect()
            })
            .collect()
    }

    pub(super) fn clear_index_for_point(
        &mut self,
        point_id: PointOffsetType,
    ) -> OperationResult<()> {
        for (field, field_indexes) in self.field_indexes.iter_mut() {
            // kledger patch (change 6).
            if super::deferred_field(self.deferring, &self.config, field, field_indexes) {
                continue;
            }
            for index in field_indexes {
                index.remove_point(point_id)?;
            }
        }
        Ok(())
    }
}
