#include "hattn/error.h"

#include "quoted.h"

namespace hattn {

std::string Error::one_line(const std::string &message) {
    return detail::escaped(message, max_message_bytes);
}

}  // namespace hattn
