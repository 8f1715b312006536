/* version: hoard's release version (hoard_build_info, hoard --version). */
#ifndef HD_VERSION_H
#define HD_VERSION_H

#define HD_VERSION "0.1.0"

#endif
