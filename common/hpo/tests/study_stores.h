// The two study stores the storage tests run on: a fresh SQLite file, or a fresh database on a
// private PostgreSQL server (tools/postgres/private_server.sh) that the first PostgreSQL test
// starts as an unprivileged user on a free port and the test binary stops at its end.
#pragma once

#include <string>

namespace course::hpo::testing_stores {

enum class Store { kSqlite, kPostgres };

const char* store_name(Store store);
// A location no earlier test used: a removed SQLite path, or a database made empty on the server.
std::string fresh_location(Store store, const std::string& name);

// The private server's URL of database `name` (which need not exist), and its control.
std::string server_url(const std::string& name);
void kill_server();   // at once, as a failed node
void start_server();  // again, on its port, with its data

}  // namespace course::hpo::testing_stores
