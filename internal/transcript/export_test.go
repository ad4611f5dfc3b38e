package transcript

// SQLiteMigrations lets the tests build a file at an older schema version.
var SQLiteMigrations = sqliteMigrations
