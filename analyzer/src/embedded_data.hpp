#pragma once
// The data files of analyzer/data, embedded into the binary at build time (analyzer/cmake/embed_data.cmake
// writes embedded_data_files.cpp): model presets (data/models), SimuMax's configuration files
// (data/simumax).  Adding a file to analyzer/data adds it here at the next build.
#include <string>
#include <vector>

namespace preflight::analyzer::embedded {

struct File {
  const char* path;  ///< relative to analyzer/data, '/'-separated ("models/llama2-7b.json")
  const char* text;  ///< the file's bytes
};

/// Every embedded file, sorted by path.
const std::vector<File>& files();

/// The files directly inside `folder` ("simumax/system"), sorted by path.
std::vector<const File*> in_folder(const std::string& folder);

/// The file at `path`, or nullptr.
const File* find(const std::string& path);

/// "llama2-7b" for "models/llama2-7b.json".
std::string stem(const File& f);

}  // namespace preflight::analyzer::embedded
