/*
 * bcryptprimitives.dll for Wine 8.0, which has none: the Go runtime
 * (1.24 on) takes its random bytes from ProcessPrng there, and a Go
 * program dies at start without it ("bcryptprimitives.dll not found").
 * For the test machine's Wine prefix only (.ci/run builds it), never
 * shipped. BCRYPT_USE_SYSTEM_PREFERRED_RNG (2): no algorithm handle.
 */
#include <windows.h>
#include <bcrypt.h>

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
	while (len > 0) {
		ULONG n = len > 0x40000000 ? 0x40000000 : (ULONG)len;
		if (!BCRYPT_SUCCESS(BCryptGenRandom(NULL, data, n, BCRYPT_USE_SYSTEM_PREFERRED_RNG)))
			return FALSE;
		data += n;
		len -= n;
	}
	return TRUE;
}
