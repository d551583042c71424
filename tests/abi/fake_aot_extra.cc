// A stand-in for MindSpore's AotExtra, so that tests can call the aot entry points of
// libms_groupnorm_cpu.so through ctypes with chosen attributes (or none).
#include <map>
#include <stdexcept>

#include "aot_extra.h"

namespace {

class FakeAotExtra : public mindspore::AotExtra {
 public:
  std::map<std::string, int64_t> ints;
  std::map<std::string, bool> bools;
  std::map<std::string, float> floats;

  bool HasAttr(std::string name) override { return ints.count(name) || bools.count(name) || floats.count(name); }
  bool GetAttrBool(std::string name) override { return bools.at(name); }
  int64_t GetAttrInt(std::string name) override { return ints.at(name); }
  float GetAttrFloat(std::string name) override { return floats.at(name); }
  std::string GetAttrStr(std::string) override { throw std::runtime_error("no string attrs"); }
  std::vector<int64_t> GetAttrIntVec(std::string) override { return {}; }
  std::vector<float> GetAttrFloatVec(std::string) override { return {}; }
  std::vector<std::vector<int64_t>> GetAttrInt2DVec(std::string) override { return {}; }
  std::vector<std::vector<float>> GetAttrFloat2DVec(std::string) override { return {}; }
};

}  // namespace

extern "C" {

void *FakeExtraNew() { return static_cast<mindspore::AotExtra *>(new FakeAotExtra()); }

void FakeExtraSetInt(void *extra, const char *name, int64_t value) {
  static_cast<FakeAotExtra *>(static_cast<mindspore::AotExtra *>(extra))->ints[name] = value;
}

void FakeExtraSetBool(void *extra, const char *name, int value) {
  static_cast<FakeAotExtra *>(static_cast<mindspore::AotExtra *>(extra))->bools[name] = value != 0;
}

void FakeExtraSetFloat(void *extra, const char *name, float value) {
  static_cast<FakeAotExtra *>(static_cast<mindspore::AotExtra *>(extra))->floats[name] = value;
}

void FakeExtraDelete(void *extra) { delete static_cast<mindspore::AotExtra *>(extra); }

}  // extern "C"
