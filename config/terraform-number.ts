/**
 * A TF_VAR_ string read as a number exactly the way Terraform and OpenTofu read it, so synth and
 * plan accept the same strings and see the same value.
 *
 * Both convert the string with go-cty's ParseNumberVal, which is Go's
 * `big.ParseFloat(s, 10, 512, big.ToNearestEven)` (zclconf/go-cty, cty/value_init.go):
 * - no white space anywhere (`" 3"` is not a number);
 * - an optional sign, then decimal digits with an optional point (`3.`, `.5`), then an optional
 *   decimal exponent `e`/`E` or binary exponent `p`/`P` (`1p3` is 8); no hex, no `_`;
 * - `Inf` and `inf` with an optional sign; no `NaN`, no `Infinity`;
 * - 512 bits of mantissa, rounded to nearest even: `3.` followed by 153 zeros and a 1 is 3.
 * Measured with tofu 1.12 and terraform 1.11; __tests__/l1-validate.test.ts (issue 17) and
 * __tests__/l1-synth-plan-agreement.test.ts plan these edges with both.
 */

const SYNTAX = /^([+-]?)(?:(inf|Inf)|(\d*)(?:\.(\d*))?(?:([eE])([+-]?\d+)|([pP])([+-]?\d+))?)$/;

const MANTISSA_BITS = 512n;

/**
 * Beyond this magnitude (in powers of ten) no parameter's range reaches: the value is ±Infinity,
 * or a fraction between 0 and 1, for every rule that reads it.
 */
const MAGNITUDE_LIMIT = 40;

function bitLength(n: bigint): bigint {
  return BigInt(n.toString(2).length);
}

/** numerator / denominator rounded to a 512-bit mantissa, nearest even: is it a whole number, and which. */
function roundToMantissa(numerator: bigint, denominator: bigint): { whole: boolean; value: number } {
  // Scale so the quotient has exactly MANTISSA_BITS bits: 2^511 <= numerator * 2^k / denominator < 2^512.
  let k = MANTISSA_BITS - (bitLength(numerator) - bitLength(denominator));
  const scaled = (shift: bigint) => (shift >= 0n ? [numerator << shift, denominator] : [numerator, denominator << -shift]);
  let [n, d] = scaled(k);
  if (n / d >= 1n << MANTISSA_BITS) [n, d] = scaled(--k);
  else if (n / d < 1n << (MANTISSA_BITS - 1n)) [n, d] = scaled(++k);
  let mantissa = n / d;
  const remainder = n % d;
  if (2n * remainder > d || (2n * remainder === d && mantissa % 2n === 1n)) mantissa += 1n;
  // value = mantissa * 2^-k
  if (k <= 0n) return { whole: true, value: Number(mantissa << -k) };
  const whole = mantissa % (1n << k) === 0n;
  return { whole, value: whole ? Number(mantissa >> k) : Number(mantissa) / 2 ** Number(k) };
}

/**
 * The number Terraform reads from `raw`, or undefined when it reads none. A value that is not
 * whole never comes back as a whole JavaScript number (a fraction too small for a double is kept
 * as one), and one too large for the parameters' ranges comes back as ±Infinity.
 */
export function parseTerraformNumber(raw: string): number | undefined {
  const match = SYNTAX.exec(raw);
  if (!match) return undefined;
  const [, sign, infinity, integerDigits = "", fractionDigits = "", e, decimalExponent, p, binaryExponent] = match;
  const negative = sign === "-";
  if (infinity) return negative ? -Infinity : Infinity;
  if (integerDigits === "" && fractionDigits === "") return undefined;
  const digits = (integerDigits + fractionDigits).replace(/^0+/, "");
  if (digits === "") return 0;
  const exponent10 = (e ? Number(decimalExponent) : 0) - fractionDigits.length;
  const exponent2 = p ? Number(binaryExponent) : 0;
  // The value is digits * 10^exponent10 * 2^exponent2; its order of magnitude decides the far cases.
  const magnitude = digits.length + exponent10 + exponent2 * Math.log10(2);
  const signed = (value: number) => (negative ? -value : value);
  if (magnitude > MAGNITUDE_LIMIT) return signed(Infinity);
  if (magnitude < -MAGNITUDE_LIMIT) return signed(0.5);
  let numerator = BigInt(digits);
  let denominator = 1n;
  if (exponent10 >= 0) numerator *= 10n ** BigInt(exponent10);
  else denominator *= 10n ** BigInt(-exponent10);
  if (exponent2 >= 0) numerator <<= BigInt(exponent2);
  else denominator <<= BigInt(-exponent2);
  const { whole, value } = roundToMantissa(numerator, denominator);
  // A fraction a double cannot tell from a whole number stays a fraction for the rules.
  if (!whole && Number.isInteger(value)) return signed(value + 0.5);
  return signed(value);
}
