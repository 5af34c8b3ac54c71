//! What the pipeline asks of control, answered from control's own tables:
//! the name an ACP start gave a session whose hooks report under the
//! harness's own id (`AcpNames`, the pipeline's `GivenNames`). The pipeline
//! asks through its trait and names no table of control's; control answers
//! with its one query (`store::acp_name`).

use crate::pipeline::outbox::GivenNames;

/// Control's answer to `GivenNames`: the names its ACP starts gave.
pub struct AcpNames;

impl GivenNames for AcpNames {
    fn name_of(
        &self,
        conn: &rusqlite::Connection,
        harness: &str,
        id: &str,
    ) -> rusqlite::Result<Option<String>> {
        super::store::acp_name(conn, harness, id)
    }
}
