// Boost.URL's compiled part (Boost 1.81 builds it header-only when one translation unit includes
// src.hpp): the registry client parses token realms and redirect locations with it.
#include <boost/url/src.hpp>  // IWYU pragma: keep
