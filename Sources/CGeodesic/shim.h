#ifndef DBEACON_CGEODESIC_SHIM_H
#define DBEACON_CGEODESIC_SHIM_H
/* Karney's geodesic algorithms (GeographicLib's C implementation, as shipped in PROJ):
   exact to round-off on the ellipsoid for every pair of points, antipodal ones included. */
#include <geodesic.h>
#endif
