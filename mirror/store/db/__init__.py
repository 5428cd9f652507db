"""The database itself: engines and pragmas, failures as StoreError, migrations, compression,
the shared SQL text and the rows every table's writes use."""
