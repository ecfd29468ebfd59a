"""Pure request validation: rules that need no database, kept apart to be unit-tested."""
