-- Devin CLI's session store (`sessions.db`), minimal: only the tables and
-- columns sessionpipe reads, with the types the Devin row of ADAPTERS.md gives
-- (slug ids, unix-second times, JSON `chat_message`). Built from ADAPTERS.md,
-- not recorded: Devin's own store has more columns and tables.
CREATE TABLE sessions (
  id TEXT PRIMARY KEY,
  working_directory TEXT NOT NULL,
  model TEXT NOT NULL,
  title TEXT,
  created_at INTEGER NOT NULL,
  last_activity_at INTEGER NOT NULL,
  main_chain_id INTEGER
);

CREATE TABLE message_nodes (
  row_id INTEGER PRIMARY KEY AUTOINCREMENT,
  session_id TEXT NOT NULL,
  node_id INTEGER NOT NULL,
  parent_node_id INTEGER,
  chat_message TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  UNIQUE (session_id, node_id)
);

CREATE TABLE prompt_history (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  content TEXT NOT NULL,
  timestamp INTEGER NOT NULL,
  session_id TEXT NOT NULL,
  is_shell INTEGER NOT NULL DEFAULT 0
);
