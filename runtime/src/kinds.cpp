#include "hattn/kinds.h"

#include <iterator>

namespace hattn {

namespace {

constexpr KindInfo kinds[] = {
    {"cached_attention", "embedding_dimension", "hidden_size", true, true},
    {"cca", "hidden_size", nullptr, true, false},
    {"ccgqa", "hidden_size", nullptr, true, false},
    {"zaya_cca", "hidden_size", nullptr, true, false},
    {"glm_dsa", "hidden_size", nullptr, true, false},
};

}  // namespace

const KindInfo *find_kind(const std::string &name) {
    for (const KindInfo &k : kinds) {
        if (name == k.name) return &k;
    }
    return nullptr;
}

std::string known_kind_names() {
    std::string names;
    for (const KindInfo &k : kinds) {
        if (!names.empty()) names += ", ";
        names += k.name;
    }
    return names;
}

}  // namespace hattn
