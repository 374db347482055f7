// --paradnn_bricks_db: bricks measured by earlier runs, reused where they
// were measured in the same context, so that a sweep that shares layers
// with an earlier one times only its new layers.
#pragma once

namespace paradnn {

struct Run;

// Reads the database (a missing file is an empty one), and marks every
// brick of the run that it holds for this run's context (CPU, threads, the
// backend's library, paradnn's version) as known: it is not registered and
// its time comes from the database. Entries for another context are never
// used; a note says how many were passed over. std::runtime_error naming
// the file on bad content.
void UseBricksDb(Run& run);

// Writes the database back: what it held, with the bricks this run measured
// added, replacing those of the same name and context.
void SaveBricksDb(Run& run);

}  // namespace paradnn
