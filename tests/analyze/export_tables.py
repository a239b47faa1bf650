"""The tables of a minimal nsys SQLite export, as the hand-made exports of the analysis tests
create them: the columns nsysgen's reader asks for, in nsys 2025.3.1's names."""

TABLES = (
    "CREATE TABLE StringIds (id INTEGER, value TEXT);"
    "CREATE TABLE NVTX_EVENTS (start INTEGER, end INTEGER, eventType INTEGER, text TEXT,"
    " globalTid INTEGER, textId INTEGER, domainId INTEGER, binaryData TEXT);"
    "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER,"
    " globalTid INTEGER, correlationId INTEGER, nameId INTEGER);"
    "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER,"
    " streamId INTEGER, correlationId INTEGER, globalPid INTEGER, shortName INTEGER);"
)
