//! Opening the database: connecting to it, then bringing its schema up to
//! this build's (`schema`), refusing one a newer build has moved past.
//!
//! This module owns that order. It must not run anything but the
//! migrations.

use super::database::{Db, Location};
use super::schema;
use super::values::DbError;

impl Db {
    /// Opens the database and brings its schema up to this build's, refusing
    /// one that a newer build has moved past.
    pub async fn open(at: Location<'_>) -> Result<Db, DbError> {
        let db = Db::connect(at).await?;
        schema::migrate(&db).await?;
        Ok(db)
    }
}
